//! The opcode loop.

use std::collections::HashMap;
use std::rc::Rc;

use super::bad;
use super::globals::{allowed, call, persistent};
use super::opcode::*;
use super::value::{Container, Pickled, StorageRef, Value, new_container};
use crate::error::{Error, Result, Rule};
use crate::limits::{MAX_PICKLE_MEMO as MAX_MEMO, MAX_PICKLE_STACK as MAX_STACK};

/// Run `input` to its STOP and return what it builds (bytes after the STOP are not read).
pub fn load(input: &[u8]) -> Result<Pickled> {
    load_prefix(input).map(|l| l.value)
}

/// What running one pickle gives.
pub struct Loaded {
    pub value: Pickled,
    /// Every storage its persistent ids named, in order.
    pub storages: Vec<StorageRef>,
    /// Bytes of input up to and including the STOP.
    pub consumed: usize,
}

/// Run the pickle at the start of `input` (files before PyTorch 1.6 hold several in a row).
pub fn load_prefix(input: &[u8]) -> Result<Loaded> {
    run(input, false)
}

/// Run a pickle of a TorchScript archive (`torch.jit.save`: `data.pkl`, `constants.pkl`) to
/// its STOP: as [`load`], and its objects of `__torch__.*` classes are built as
/// [`Container::Instance`] records (class named, state kept, nothing run); the `torch.jit._pickle`
/// helpers give back their argument. Every other global is allowed or refused as in [`load`].
pub fn load_torchscript(input: &[u8]) -> Result<Pickled> {
    run(input, true).map(|l| l.value)
}

fn run(input: &[u8], torchscript: bool) -> Result<Loaded> {
    let mut m = Machine {
        torchscript,
        input,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        storages: Vec::new(),
        arena: Vec::new(),
    };
    let root = m.run()?;
    Ok(Loaded { value: Pickled { root, arena: m.arena }, storages: m.storages, consumed: m.pos })
}

struct Machine<'a> {
    /// Whether the pickle is a TorchScript archive's (`load_torchscript`).
    torchscript: bool,
    input: &'a [u8],
    pos: usize,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: HashMap<u64, Value>,
    storages: Vec<StorageRef>,
    arena: Vec<Container>,
}

impl Machine<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.input.len());
        let end = end
            .ok_or_else(|| Error::invalid(Rule::Truncated, format!("pickle ends inside an opcode at {}", self.pos)))?;
        let s = &self.input[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn le<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.take(N)?.try_into().unwrap_or([0; N]))
    }

    fn len_of(&mut self, width: usize) -> Result<usize> {
        let n = match width {
            1 => u64::from(self.u8()?),
            4 => u64::from(u32::from_le_bytes(self.le()?)),
            _ => u64::from_le_bytes(self.le()?),
        };
        usize::try_from(n).ok().filter(|&n| n <= self.input.len() - self.pos).ok_or_else(|| {
            Error::invalid(Rule::Truncated, format!("pickle item of {n} bytes, {} left", self.input.len() - self.pos))
        })
    }

    fn line(&mut self) -> Result<String> {
        let rest = &self.input[self.pos..];
        let n = rest.iter().position(|&b| b == b'\n').ok_or_else(|| bad("unterminated text argument"))?;
        let s = String::from_utf8(rest[..n].to_vec()).map_err(|_| bad("text argument is not UTF-8"))?;
        self.pos += n + 1;
        Ok(s)
    }

    /// A new container in the arena (each costs input bytes, so the arena stays bounded).
    fn new_container(&mut self, c: Container) -> Result<Value> {
        new_container(&mut self.arena, c)
    }

    fn container_mut(&mut self, v: &Value) -> Option<&mut Container> {
        match v {
            Value::Container(id) => self.arena.get_mut(*id),
            _ => None,
        }
    }

    fn push(&mut self, v: Value) -> Result<()> {
        if self.stack.len() >= MAX_STACK {
            return Err(Error::invalid(Rule::TooManyEntries, "pickle stack too deep"));
        }
        self.stack.push(v);
        Ok(())
    }

    fn pop(&mut self) -> Result<Value> {
        if self.marks.last().is_some_and(|&m| m >= self.stack.len()) {
            return Err(bad("pop across a mark"));
        }
        self.stack.pop().ok_or_else(|| bad("stack underflow"))
    }

    fn top(&self) -> Result<&Value> {
        self.stack.last().ok_or_else(|| bad("stack underflow"))
    }

    fn pop_mark(&mut self) -> Result<Vec<Value>> {
        let m = self.marks.pop().ok_or_else(|| bad("no mark"))?;
        if m > self.stack.len() {
            return Err(bad("mark beyond the stack"));
        }
        Ok(self.stack.split_off(m))
    }

    fn memo_put(&mut self, key: u64) -> Result<()> {
        let v = self.top()?.clone();
        if self.memo.len() >= MAX_MEMO && !self.memo.contains_key(&key) {
            return Err(Error::invalid(
                Rule::TooManyEntries,
                format!("pickle memo over {MAX_MEMO} entries (refused after {} bytes)", self.pos),
            ));
        }
        self.memo.insert(key, v);
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> Result<()> {
        let v =
            self.memo.get(&key).cloned().ok_or_else(|| bad(format!("memo entry {key} read before it is written")))?;
        self.push(v)
    }

    fn global(&mut self, module: &str, name: &str) -> Result<()> {
        let v = allowed(module, name, self.torchscript).ok_or_else(|| {
            Error::invalid(
                Rule::ForbiddenGlobal,
                format!("the pickle calls {module}.{name}, which is not allowed: refused"),
            )
        })?;
        self.push(v)
    }

    fn run(&mut self) -> Result<Value> {
        loop {
            let at = self.pos;
            match self.u8()? {
                STOP => return self.pop(),
                op => self.step(op, at)?,
            }
        }
    }

    /// One opcode (all but STOP), read at `at`.
    fn step(&mut self, op: u8, at: usize) -> Result<()> {
        match op {
            PROTO => {
                self.u8()?;
            }
            FRAME => {
                self.take(8)?;
            }
            MARK => self.marks.push(self.stack.len()),
            POP => {
                self.pop()?;
            }
            POP_MARK => {
                self.pop_mark()?;
            }
            DUP => {
                let v = self.top()?.clone();
                self.push(v)?;
            }
            NONE => self.push(Value::None)?,
            NEWTRUE => self.push(Value::Bool(true))?,
            NEWFALSE => self.push(Value::Bool(false))?,
            BININT | BININT1 | BININT2 | INT | LONG | LONG1 | LONG4 | FLOAT | BINFLOAT => {
                let v = self.number(op)?;
                self.push(v)?;
            }
            BINUNICODE | SHORT_BINUNICODE | BINUNICODE8 | BINSTRING | SHORT_BINSTRING => {
                let v = self.text(op)?;
                self.push(v)?;
            }
            BINBYTES | SHORT_BINBYTES | BINBYTES8 | BYTEARRAY8 => {
                let n = self.len_of(match op {
                    BINBYTES => 4,
                    SHORT_BINBYTES => 1,
                    _ => 8,
                })?;
                let b = self.take(n)?.into();
                self.push(Value::Bytes(b))?;
            }
            EMPTY_TUPLE | TUPLE | TUPLE1 | TUPLE2 | TUPLE3 | EMPTY_LIST | LIST | APPEND | APPENDS | EMPTY_DICT
            | DICT | SETITEM | SETITEMS | EMPTY_SET | ADDITEMS | FROZENSET => self.container_op(op)?,
            GET | BINGET | LONG_BINGET | PUT | BINPUT | LONG_BINPUT | MEMOIZE => self.memo_op(op)?,
            GLOBAL | STACK_GLOBAL | REDUCE | NEWOBJ | BUILD | BINPERSID | PERSID => self.object_op(op)?,
            other => {
                return Err(bad(format!("opcode 0x{other:02x} at {at} is not one torch.save uses: refused")));
            }
        }
        Ok(())
    }

    /// The value of a number opcode: BININT, BININT1, BININT2, INT, LONG, LONG1, LONG4, FLOAT
    /// or BINFLOAT.
    fn number(&mut self, op: u8) -> Result<Value> {
        Ok(match op {
            BININT => Value::Int(i64::from(i32::from_le_bytes(self.le()?))),
            BININT1 => Value::Int(i64::from(self.u8()?)),
            BININT2 => Value::Int(i64::from(u16::from_le_bytes(self.le()?))),
            INT | LONG => {
                let text = self.line()?;
                let text = text.trim_end_matches('L');
                match text {
                    "00" => Value::Bool(false),
                    "01" => Value::Bool(true),
                    t => Value::Int(t.parse().map_err(|_| bad(format!("bad integer {t:?}")))?),
                }
            }
            LONG1 | LONG4 => {
                let n = self.len_of(if op == LONG1 { 1 } else { 4 })?;
                let b = self.take(n)?;
                if n <= 8 {
                    let mut buf = if b.last().is_some_and(|&x| x & 0x80 != 0) { [0xff; 8] } else { [0; 8] };
                    buf[..n].copy_from_slice(b);
                    Value::Int(i64::from_le_bytes(buf))
                } else {
                    Value::BigInt(b.into())
                }
            }
            FLOAT => {
                let t = self.line()?;
                Value::Float(t.trim().parse().map_err(|_| bad(format!("bad float {t:?}")))?)
            }
            _ => Value::Float(f64::from_be_bytes(self.le()?)),
        })
    }

    /// The string of BINUNICODE, SHORT_BINUNICODE, BINUNICODE8 (UTF-8), BINSTRING or
    /// SHORT_BINSTRING (one char per byte).
    fn text(&mut self, op: u8) -> Result<Value> {
        let width = match op {
            BINUNICODE | BINSTRING => 4,
            BINUNICODE8 => 8,
            _ => 1,
        };
        let n = self.len_of(width)?;
        let b = self.take(n)?;
        let s: Rc<str> = if matches!(op, BINSTRING | SHORT_BINSTRING) {
            b.iter().map(|&c| char::from(c)).collect::<String>().into()
        } else {
            std::str::from_utf8(b).map_err(|_| Error::invalid(Rule::BadUtf8, "pickled string is not UTF-8"))?.into()
        };
        Ok(Value::Str(s))
    }

    /// The opcodes that make tuples, lists, dicts and sets, or add to them.
    fn container_op(&mut self, op: u8) -> Result<()> {
        match op {
            EMPTY_TUPLE | EMPTY_LIST | EMPTY_DICT | EMPTY_SET => {
                let c = match op {
                    EMPTY_TUPLE => Container::Tuple(Vec::new()),
                    EMPTY_LIST => Container::List(Vec::new()),
                    EMPTY_DICT => Container::Dict(Vec::new()),
                    _ => Container::Set(Vec::new()),
                };
                let v = self.new_container(c)?;
                self.push(v)
            }
            TUPLE | LIST | FROZENSET => {
                let items = self.pop_mark()?;
                let c = match op {
                    TUPLE => Container::Tuple(items),
                    LIST => Container::List(items),
                    _ => Container::Set(items),
                };
                let v = self.new_container(c)?;
                self.push(v)
            }
            TUPLE1 | TUPLE2 | TUPLE3 => {
                let n = usize::from(op - TUPLE1 + 1);
                if self.stack.len() < n || self.marks.last().is_some_and(|&m| m > self.stack.len() - n) {
                    return Err(bad("tuple across a mark or past the stack"));
                }
                let items = self.stack.split_off(self.stack.len() - n);
                let t = self.new_container(Container::Tuple(items))?;
                self.push(t)
            }
            APPEND => {
                let v = self.pop()?;
                self.append(vec![v])
            }
            APPENDS => {
                let items = self.pop_mark()?;
                self.append(items)
            }
            DICT => {
                let items = self.pop_mark()?;
                let dict = self.new_container(Container::Dict(Vec::new()))?;
                self.push(dict)?;
                self.set_items(items)
            }
            SETITEM => {
                let v = self.pop()?;
                let k = self.pop()?;
                self.set_items(vec![k, v])
            }
            SETITEMS => {
                let items = self.pop_mark()?;
                self.set_items(items)
            }
            _ => {
                // ADDITEMS
                let items = self.pop_mark()?;
                let top = self.top()?.clone();
                match self.container_mut(&top) {
                    Some(Container::Set(s)) => {
                        s.extend(items);
                        Ok(())
                    }
                    _ => Err(bad(format!("ADDITEMS on a {}", top.kind(&self.arena)))),
                }
            }
        }
    }

    /// GET, BINGET, LONG_BINGET, PUT, BINPUT, LONG_BINPUT and MEMOIZE.
    fn memo_op(&mut self, op: u8) -> Result<()> {
        let key = match op {
            GET | PUT => self.line()?.parse().map_err(|_| bad("bad memo key"))?,
            BINGET | BINPUT => u64::from(self.u8()?),
            LONG_BINGET | LONG_BINPUT => u64::from(u32::from_le_bytes(self.le()?)),
            _ => self.memo.len() as u64,
        };
        match op {
            GET | BINGET | LONG_BINGET => self.memo_get(key),
            _ => self.memo_put(key),
        }
    }

    /// GLOBAL, STACK_GLOBAL, REDUCE, NEWOBJ, BUILD, BINPERSID and PERSID.
    fn object_op(&mut self, op: u8) -> Result<()> {
        match op {
            GLOBAL => {
                let module = self.line()?;
                let name = self.line()?;
                self.global(&module, &name)
            }
            STACK_GLOBAL => {
                let name = self.pop()?;
                let module = self.pop()?;
                match (module.as_str(), name.as_str()) {
                    (Some(m), Some(n)) => self.global(m, n),
                    _ => Err(bad("STACK_GLOBAL without two strings")),
                }
            }
            REDUCE | NEWOBJ => {
                let args = self.pop()?;
                let callable = self.pop()?;
                let v = call(&mut self.arena, &callable, &args)?;
                self.push(v)
            }
            BUILD => {
                // State for an object we built: a TorchScript object keeps it; tensors and
                // dicts ignore it.
                let state = self.pop()?;
                let top = self.top()?.clone();
                if let Some(Container::Instance { state: kept, class }) = self.container_mut(&top) {
                    if kept.is_some() {
                        let class = format!("{}.{}", class.0, class.1);
                        return Err(bad(format!("BUILD twice on one object of {class}")));
                    }
                    *kept = Some(state);
                    return Ok(());
                }
                match &top {
                    Value::Tensor(_) | Value::Object(_) => Ok(()),
                    Value::Container(_) if top.kind(&self.arena) == "dict" => Ok(()),
                    other => Err(bad(format!("BUILD on a {}", other.kind(&self.arena)))),
                }
            }
            BINPERSID => {
                let pid = self.pop()?;
                let storage = persistent(&self.arena, &pid)?;
                if self.storages.len() < MAX_STACK {
                    self.storages.push(storage.clone());
                }
                self.push(Value::Storage(Rc::new(storage)))
            }
            _ => Err(bad("text persistent ids are not used by torch.save")),
        }
    }

    fn append(&mut self, items: Vec<Value>) -> Result<()> {
        let top = self.top()?.clone();
        match self.container_mut(&top) {
            Some(Container::List(l)) => {
                l.extend(items);
                Ok(())
            }
            _ => Err(bad(format!("APPEND to a {}", top.kind(&self.arena)))),
        }
    }

    fn set_items(&mut self, items: Vec<Value>) -> Result<()> {
        if items.len() % 2 != 0 {
            return Err(bad("odd number of dict items"));
        }
        let top = self.top()?.clone();
        let Some(Container::Dict(d)) = self.container_mut(&top) else {
            return Err(bad(format!("SETITEMS on a {}", top.kind(&self.arena))));
        };
        let mut it = items.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            d.push((k, v));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DType;

    fn rule(bytes: &[u8]) -> Rule {
        load(bytes).unwrap_err().rule().unwrap()
    }

    #[test]
    fn forbidden_globals_are_named_and_never_run() {
        // cos\nsystem\n(S'echo hi'\ntR.
        let e = load(b"cos\nsystem\n(X\x07\x00\x00\x00echo hit R.").unwrap_err();
        assert_eq!(e.rule(), Some(Rule::ForbiddenGlobal));
        assert!(e.message().contains("os.system"), "{e}");
        assert_eq!(rule(b"\x80\x02cbuiltins\neval\n."), Rule::ForbiddenGlobal);
        assert_eq!(rule(b"\x80\x04\x8c\x02os\x8c\x06system\x93."), Rule::ForbiddenGlobal);
    }

    #[test]
    fn malformed_pickles() {
        assert_eq!(rule(b"."), Rule::BadPickle, "stop on an empty stack");
        assert_eq!(rule(b"h\x05."), Rule::BadPickle, "memo read before write");
        assert_eq!(rule(b"X\xff\xff\xff\xff"), Rule::Truncated);
        assert_eq!(rule(b"\x8d\xff\xff\xff\xff\xff\xff\xff\xff"), Rule::Truncated);
        assert_eq!(rule(b"(N1."), Rule::BadPickle, "pop_mark leaves nothing for stop");
        assert_eq!(rule(b"\xff"), Rule::BadPickle);
        assert_eq!(rule(b"N"), Rule::Truncated, "no STOP");
        assert_eq!(rule(b"(Na."), Rule::BadPickle, "append across a mark to a non-list");
    }

    /// `torch._utils._rebuild_tensor(storage, 1, (2, 3), (3, 1))` with `extra` more arguments,
    /// as PyTorch before 1.0 pickled a tensor.
    fn rebuild_tensor_pickle(extra: &[u8]) -> Vec<u8> {
        let text = |s: &str| [&[b'X'][..], &(s.len() as u32).to_le_bytes(), s.as_bytes()].concat();
        let mut p = b"\x80\x02ctorch._utils\n_rebuild_tensor\n((".to_vec();
        p.extend(text("storage"));
        p.extend_from_slice(b"ctorch\nFloatStorage\n");
        p.extend(text("0"));
        p.extend(text("cpu"));
        p.extend_from_slice(b"K\x06tQK\x01K\x02K\x03\x86K\x03K\x01\x86");
        p.extend_from_slice(extra);
        p.extend_from_slice(b"tR.");
        p
    }

    #[test]
    fn tensors_rebuilt_as_before_pytorch_1_0() {
        let p = load(&rebuild_tensor_pickle(b"")).unwrap();
        let Value::Tensor(t) = &p.root else { panic!("{:?}", p.root) };
        assert_eq!((t.dtype, t.storage_offset), (DType::Float32, 1));
        assert_eq!((t.shape.as_slice(), t.strides.as_slice()), (&[2, 3][..], &[3, 1][..]));
        assert_eq!((t.storage.key.as_str(), t.storage.numel, t.requires_grad), ("0", 6, false));
        // It takes exactly four arguments (`requires_grad` came with `_rebuild_tensor_v2`).
        assert_eq!(rule(&rebuild_tensor_pickle(b"\x88")), Rule::BadPickle);
    }

    #[test]
    fn memo_bombs_are_bounded() {
        // Every LONG_BINPUT with a distinct huge key: refused past the memo limit, cheaply.
        let mut p = vec![b'N'];
        for i in 0..(MAX_MEMO as u32 + 2) {
            p.push(b'r');
            p.extend_from_slice(&(i.wrapping_mul(2654435761)).to_le_bytes());
        }
        p.push(b'.');
        let e = load(&p).unwrap_err();
        assert_eq!(e.rule(), Some(Rule::TooManyEntries));
        // Refused at the first put past the limit: NONE, then MAX_MEMO + 1 puts of 5 bytes.
        let at = 1 + 5 * (MAX_MEMO + 1);
        assert!(e.message().contains(&format!("after {at} bytes")), "{e}");
    }

    #[test]
    fn torchscript_objects_are_records_of_their_state_and_only_there() {
        // M() with state {'x': 1}, as torch.jit.save pickles a module.
        let p = b"\x80\x02c__torch__.a\nM\n)\x81}X\x01\x00\x00\x00xK\x01sb.";
        assert_eq!(rule(p), Rule::ForbiddenGlobal, "torch.save files name no __torch__ class");
        let v = load_torchscript(p).unwrap();
        let Value::Container(id) = v.root else { panic!("{:?}", v.root) };
        let Container::Instance { class, state: Some(state) } = &v.arena[id] else { panic!("{:?}", v.arena) };
        assert_eq!((class.0.as_str(), class.1.as_str()), ("__torch__.a", "M"));
        assert_eq!(v.pairs(state).unwrap()[0].1.as_int(), Some(1));
        // Set twice: refused.
        let twice = b"\x80\x02c__torch__\nM\n)\x81}b}b.";
        assert_eq!(load_torchscript(twice).unwrap_err().rule(), Some(Rule::BadPickle));
        // restore_type_tag gives back its value; other globals stay refused.
        let tagged = b"\x80\x02ctorch.jit._pickle\nrestore_type_tag\n}X\x01\x00\x00\x00T\x86R.";
        assert!(v_is_dict(&load_torchscript(tagged).unwrap()));
        assert_eq!(rule(tagged), Rule::ForbiddenGlobal);
        let system = b"\x80\x02cos\nsystem\nX\x01\x00\x00\x00x\x85R.";
        assert_eq!(load_torchscript(system).unwrap_err().rule(), Some(Rule::ForbiddenGlobal));
    }

    fn v_is_dict(p: &Pickled) -> bool {
        p.pairs(&p.root).is_some()
    }

    #[test]
    fn containers_are_shared_through_the_memo() {
        // l = []; memo[0] = l; d = {'a': l}; l.append(1)  -> d['a'] sees [1]
        let p = load(b"]q\x00}(X\x01\x00\x00\x00ah\x00uh\x00K\x01a0.").unwrap();
        let pairs = p.pairs(&p.root).unwrap();
        assert_eq!(p.items(&pairs[0].1).unwrap().len(), 1);
    }
}
