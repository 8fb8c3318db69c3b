//! Pickles written opcode by opcode, as `torch.save` writes them (and as attackers do not).

/// A pickle under construction.
#[derive(Debug, Clone, Default)]
pub struct P(pub Vec<u8>);

impl P {
    /// `PROTO n`.
    pub fn proto(n: u8) -> P {
        P(vec![0x80, n])
    }

    pub fn op(mut self, op: u8) -> P {
        self.0.push(op);
        self
    }

    pub fn raw(mut self, b: &[u8]) -> P {
        self.0.extend_from_slice(b);
        self
    }

    /// `BINUNICODE`.
    pub fn text(mut self, s: &str) -> P {
        self.0.push(b'X');
        self.0.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.0.extend_from_slice(s.as_bytes());
        self
    }

    /// `BININT`.
    pub fn int(mut self, v: u32) -> P {
        self.0.push(b'J');
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// `GLOBAL module name`.
    pub fn global(mut self, module: &str, name: &str) -> P {
        self.0.push(b'c');
        self.0.extend_from_slice(format!("{module}\n{name}\n").as_bytes());
        self
    }

    /// A non-negative integer: `BININT`, or `LONG1` when it does not fit 31 bits.
    pub fn num(self, v: u64) -> P {
        match u32::try_from(v) {
            Ok(small) if small < 1 << 31 => self.int(small),
            _ => {
                // LONG1: the shortest little-endian two's complement, as Python writes it.
                let mut bytes = v.to_le_bytes().to_vec();
                while bytes.len() > 1 && bytes[bytes.len() - 1] == 0 && bytes[bytes.len() - 2] & 0x80 == 0 {
                    bytes.pop();
                }
                if bytes[bytes.len() - 1] & 0x80 != 0 {
                    bytes.push(0); // keep the value positive
                }
                let mut p = self.op(0x8a).op(bytes.len() as u8);
                p.0.extend_from_slice(&bytes);
                p
            }
        }
    }

    /// A tuple of integers: `MARK`, the numbers, `TUPLE`.
    pub fn ints(self, v: &[u64]) -> P {
        v.iter().fold(self.op(b'('), |p, &d| p.num(d)).op(b't')
    }

    /// A tensor: `_rebuild_tensor_v2` of storage `key` (a `torch.<storage>` of `numel`
    /// elements) viewed at `offset` with `shape` and `stride`.
    pub fn tensor(self, storage: &str, key: &str, numel: u64, offset: u64, shape: &[u64], stride: &[u64]) -> P {
        self.global("torch._utils", "_rebuild_tensor_v2")
            .op(b'(')
            .op(b'(')
            .text("storage")
            .global("torch", storage)
            .text(key)
            .text("cpu")
            .num(numel)
            .op(b't')
            .op(b'Q')
            .num(offset)
            .ints(shape)
            .ints(stride)
            .op(0x89)
            .global("collections", "OrderedDict")
            .op(b')')
            .op(b'R')
            .op(b't')
            .op(b'R')
    }

    pub fn stop(self) -> Vec<u8> {
        self.op(b'.').0
    }
}

/// One tensor of a state dict: name, storage type, storage key, numel, offset, shape, stride.
pub struct T<'a> {
    pub name: &'a str,
    pub storage: &'a str,
    pub key: &'a str,
    pub numel: u64,
    pub offset: u64,
    pub shape: &'a [u64],
    pub stride: &'a [u64],
}

/// `{name: tensor, ...}` as `torch.save(state_dict)` pickles it (protocol 2).
pub fn state_dict(tensors: &[T<'_>]) -> Vec<u8> {
    let mut p = P::proto(2).op(b'}').op(b'(');
    for t in tensors {
        p = p.text(t.name).tensor(t.storage, t.key, t.numel, t.offset, t.shape, t.stride);
    }
    p.op(b'u').stop()
}

/// A float32 tensor `w` of `shape` over all of storage `0`, row-major.
pub fn one_float_tensor(shape: &[u64]) -> Vec<u8> {
    let numel = shape.iter().product();
    let stride = row_major(shape);
    state_dict(&[T { name: "w", storage: "FloatStorage", key: "0", numel, offset: 0, shape, stride: &stride }])
}

pub fn row_major(shape: &[u64]) -> Vec<u64> {
    let mut s = vec![1u64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}
