//! A deflate (RFC 1951) encoder written by hand: one block with the fixed Huffman codes,
//! runs of a repeated byte as matches at distance 1, everything else as literals. Small and
//! deterministic (no dependency on a compressor's version), and strong enough on runs to
//! make zip bombs of a few kilobytes.

struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    /// `count` bits of `value`, least significant first.
    fn put(&mut self, value: u32, count: u32) {
        self.acc |= u64::from(value) << self.n;
        self.n += count;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code of `len` bits, most significant bit first.
    fn code(&mut self, code: u32, len: u32) {
        let reversed = code.reverse_bits() >> (32 - len);
        self.put(reversed, len);
    }

    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

/// Literal/length symbol `sym` in the fixed code.
fn symbol(b: &mut Bits, sym: u32) {
    match sym {
        0..=143 => b.code(0x30 + sym, 8),
        144..=255 => b.code(0x190 + sym - 144, 9),
        256..=279 => b.code(sym - 256, 7),
        _ => b.code(0xc0 + sym - 280, 8),
    }
}

const LENGTH_BASE: [u32; 28] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227];
const LENGTH_EXTRA: [u32; 28] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5];

/// A match of `len` (3..=258) bytes at distance 1.
fn repeat(b: &mut Bits, len: u32) {
    if len == 258 {
        symbol(b, 285);
    } else {
        let k = LENGTH_BASE.iter().rposition(|&base| base <= len).unwrap_or(0);
        symbol(b, 257 + k as u32);
        b.put(len - LENGTH_BASE[k], LENGTH_EXTRA[k]);
    }
    b.code(0, 5); // distance code 0: distance 1
}

pub fn deflate(data: &[u8]) -> Vec<u8> {
    let mut b = Bits { out: Vec::new(), acc: 0, n: 0 };
    b.put(1, 1); // the last block
    b.put(1, 2); // fixed Huffman codes
    let mut i = 0;
    while i < data.len() {
        let byte = data[i];
        symbol(&mut b, u32::from(byte));
        i += 1;
        let mut run = data[i..].iter().take_while(|&&x| x == byte).count();
        while run >= 3 {
            let len = run.min(258);
            repeat(&mut b, len as u32);
            i += len;
            run -= len;
        }
    }
    symbol(&mut b, 256);
    b.finish()
}
