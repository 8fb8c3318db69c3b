//! The opcode loop.

use std::collections::HashMap;
use std::rc::Rc;

use super::value::{Container, Pickled, StorageRef, TensorRef, Value, items};
use crate::error::{Error, Result, Rule};
use crate::model::DType;

use crate::limits::{MAX_PICKLE_MEMO as MAX_MEMO, MAX_PICKLE_STACK as MAX_STACK};

fn bad(detail: impl Into<String>) -> Error {
    Error::invalid(Rule::BadPickle, detail)
}

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
    let mut m = Machine {
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
    input: &'a [u8],
    pos: usize,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: HashMap<u64, Value>,
    storages: Vec<StorageRef>,
    arena: Vec<Container>,
}

/// The element type of a legacy storage class (`torch.FloatStorage`...).
fn storage_dtype(name: &str) -> Option<DType> {
    Some(match name {
        "DoubleStorage" => DType::Float64,
        "FloatStorage" => DType::Float32,
        "HalfStorage" => DType::Float16,
        "BFloat16Storage" => DType::BFloat16,
        "LongStorage" => DType::Int64,
        "IntStorage" => DType::Int32,
        "ShortStorage" => DType::Int16,
        "CharStorage" => DType::Int8,
        "ByteStorage" => DType::UInt8,
        "BoolStorage" => DType::Bool,
        "ComplexFloatStorage" => DType::Complex64,
        "ComplexDoubleStorage" => DType::Complex128,
        "QInt8Storage" => DType::QInt8,
        "QUInt8Storage" => DType::QUInt8,
        "QInt32Storage" => DType::QInt32,
        "QUInt4x2Storage" => DType::QUInt4x2,
        "QUInt2x4Storage" => DType::QUInt2x4,
        _ => return None,
    })
}

/// A `torch.<name>` dtype global.
fn dtype_global(name: &str) -> Option<DType> {
    let alias = match name {
        "float" => "float32",
        "double" => "float64",
        "half" => "float16",
        "long" => "int64",
        "int" => "int32",
        "short" => "int16",
        "cfloat" => "complex64",
        "cdouble" => "complex128",
        "chalf" => "complex32",
        other => other,
    };
    DType::from_name(alias)
}

/// Whether a global may be named, and what it stands for.
fn allowed(module: &str, name: &str) -> Option<Value> {
    let global = || Value::Global(Rc::new((module.to_string(), name.to_string())));
    match (module, name) {
        ("collections", "OrderedDict")
        | (
            "torch._utils",
            "_rebuild_tensor_v2" | "_rebuild_tensor_v3" | "_rebuild_parameter" | "_rebuild_parameter_with_state",
        )
        | ("torch._tensor", "_rebuild_from_type_v2")
        | ("torch", "Tensor" | "Size" | "device")
        | ("torch.nn.parameter", "Parameter")
        | ("torch.storage", "UntypedStorage")
        | ("torch", "UntypedStorage")
        | ("_codecs", "encode")
        | ("builtins" | "__builtin__", "set" | "frozenset" | "bytearray") => Some(global()),
        ("torch" | "torch.cuda", n) if storage_dtype(n).is_some() => Some(global()),
        ("torch", n) => dtype_global(n).map(Value::Dtype),
        _ => None,
    }
}

fn int_arg(v: &Value, what: &str) -> Result<u64> {
    v.as_int().and_then(|i| u64::try_from(i).ok()).ok_or_else(|| bad(format!("{what} is not a non-negative integer")))
}

fn ints(arena: &[Container], v: &Value, what: &str) -> Result<Vec<u64>> {
    items(arena, v).ok_or_else(|| bad(format!("{what} is not a tuple")))?.iter().map(|x| int_arg(x, what)).collect()
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
        if self.arena.len() >= MAX_STACK {
            return Err(Error::invalid(Rule::TooManyEntries, "too many containers in the pickle"));
        }
        self.arena.push(c);
        Ok(Value::Container(self.arena.len() - 1))
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
        let v = allowed(module, name).ok_or_else(|| {
            Error::invalid(
                Rule::ForbiddenGlobal,
                format!("the pickle calls {module}.{name}, which is not allowed: refused"),
            )
        })?;
        self.push(v)
    }

    fn run(&mut self) -> Result<Value> {
        loop {
            let op = self.u8()?;
            match op {
                0x80 => {
                    self.u8()?;
                }
                0x95 => {
                    self.take(8)?;
                }
                b'.' => return self.pop(),
                b'(' => self.marks.push(self.stack.len()),
                b'0' => {
                    self.pop()?;
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let v = self.top()?.clone();
                    self.push(v)?;
                }
                b'N' => self.push(Value::None)?,
                0x88 => self.push(Value::Bool(true))?,
                0x89 => self.push(Value::Bool(false))?,
                b'J' => {
                    let v = i32::from_le_bytes(self.le()?);
                    self.push(Value::Int(i64::from(v)))?;
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push(Value::Int(i64::from(v)))?;
                }
                b'M' => {
                    let v = u16::from_le_bytes(self.le()?);
                    self.push(Value::Int(i64::from(v)))?;
                }
                b'I' | b'L' => {
                    let text = self.line()?;
                    let text = text.trim_end_matches('L');
                    let v = match text {
                        "00" => Value::Bool(false),
                        "01" => Value::Bool(true),
                        t => Value::Int(t.parse().map_err(|_| bad(format!("bad integer {t:?}")))?),
                    };
                    self.push(v)?;
                }
                0x8a | 0x8b => {
                    let n = self.len_of(if op == 0x8a { 1 } else { 4 })?;
                    let b = self.take(n)?;
                    let v = if n <= 8 {
                        let mut buf = if b.last().is_some_and(|&x| x & 0x80 != 0) { [0xff; 8] } else { [0; 8] };
                        buf[..n].copy_from_slice(b);
                        Value::Int(i64::from_le_bytes(buf))
                    } else {
                        Value::BigInt(b.into())
                    };
                    self.push(v)?;
                }
                b'F' => {
                    let t = self.line()?;
                    self.push(Value::Float(t.trim().parse().map_err(|_| bad(format!("bad float {t:?}")))?))?;
                }
                b'G' => {
                    let v = f64::from_be_bytes(self.le()?);
                    self.push(Value::Float(v))?;
                }
                b'X' | 0x8c | 0x8d | b'T' | b'U' => {
                    let width = match op {
                        b'X' | b'T' => 4,
                        0x8d => 8,
                        _ => 1,
                    };
                    let n = self.len_of(width)?;
                    let b = self.take(n)?;
                    let s: Rc<str> = if matches!(op, b'T' | b'U') {
                        b.iter().map(|&c| char::from(c)).collect::<String>().into()
                    } else {
                        std::str::from_utf8(b)
                            .map_err(|_| Error::invalid(Rule::BadUtf8, "pickled string is not UTF-8"))?
                            .into()
                    };
                    self.push(Value::Str(s))?;
                }
                b'B' | b'C' | 0x8e | 0x96 => {
                    let n = self.len_of(match op {
                        b'B' => 4,
                        b'C' => 1,
                        _ => 8,
                    })?;
                    let b = self.take(n)?.into();
                    self.push(Value::Bytes(b))?;
                }
                b')' => {
                    let t = self.new_container(Container::Tuple(Vec::new()))?;
                    self.push(t)?;
                }
                b't' => {
                    let items = self.pop_mark()?;
                    let t = self.new_container(Container::Tuple(items))?;
                    self.push(t)?;
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    if self.stack.len() < n || self.marks.last().is_some_and(|&m| m > self.stack.len() - n) {
                        return Err(bad("tuple across a mark or past the stack"));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    let t = self.new_container(Container::Tuple(items))?;
                    self.push(t)?;
                }
                b']' => {
                    let l = self.new_container(Container::List(Vec::new()))?;
                    self.push(l)?;
                }
                b'l' => {
                    let items = self.pop_mark()?;
                    let l = self.new_container(Container::List(items))?;
                    self.push(l)?;
                }
                b'a' => {
                    let v = self.pop()?;
                    self.append(vec![v])?;
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    self.append(items)?;
                }
                b'}' => {
                    let d = self.new_container(Container::Dict(Vec::new()))?;
                    self.push(d)?;
                }
                b'd' => {
                    let items = self.pop_mark()?;
                    let dict = self.new_container(Container::Dict(Vec::new()))?;
                    self.push(dict)?;
                    self.set_items(items)?;
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    self.set_items(vec![k, v])?;
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    self.set_items(items)?;
                }
                0x8f => {
                    let s = self.new_container(Container::Set(Vec::new()))?;
                    self.push(s)?;
                }
                0x90 => {
                    let items = self.pop_mark()?;
                    let top = self.top()?.clone();
                    match self.container_mut(&top) {
                        Some(Container::Set(s)) => s.extend(items),
                        _ => return Err(bad(format!("ADDITEMS on a {}", top.kind(&self.arena)))),
                    }
                }
                0x91 => {
                    let items = self.pop_mark()?;
                    let s = self.new_container(Container::Set(items))?;
                    self.push(s)?;
                }
                b'g' => {
                    let key = self.line()?.parse().map_err(|_| bad("bad memo key"))?;
                    self.memo_get(key)?;
                }
                b'h' => {
                    let key = u64::from(self.u8()?);
                    self.memo_get(key)?;
                }
                b'j' => {
                    let key = u64::from(u32::from_le_bytes(self.le()?));
                    self.memo_get(key)?;
                }
                b'p' => {
                    let key = self.line()?.parse().map_err(|_| bad("bad memo key"))?;
                    self.memo_put(key)?;
                }
                b'q' => {
                    let key = u64::from(self.u8()?);
                    self.memo_put(key)?;
                }
                b'r' => {
                    let key = u64::from(u32::from_le_bytes(self.le()?));
                    self.memo_put(key)?;
                }
                0x94 => {
                    let key = self.memo.len() as u64;
                    self.memo_put(key)?;
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.global(&module, &name)?;
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    match (module.as_str(), name.as_str()) {
                        (Some(m), Some(n)) => self.global(m, n)?,
                        _ => return Err(bad("STACK_GLOBAL without two strings")),
                    }
                }
                b'R' | 0x81 => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    let v = self.call(&callable, &args)?;
                    self.push(v)?;
                }
                b'b' => {
                    // State for an object we built: tensors and dicts ignore it.
                    let _state = self.pop()?;
                    let top = self.top()?;
                    match top {
                        Value::Tensor(_) | Value::Object(_) => {}
                        Value::Container(_) if top.kind(&self.arena) == "dict" => {}
                        other => return Err(bad(format!("BUILD on a {}", other.kind(&self.arena)))),
                    }
                }
                b'Q' => {
                    let pid = self.pop()?;
                    let storage = persistent(&self.arena, &pid)?;
                    if self.storages.len() < MAX_STACK {
                        self.storages.push(storage.clone());
                    }
                    self.push(Value::Storage(Rc::new(storage)))?;
                }
                b'P' => return Err(bad("text persistent ids are not used by torch.save")),
                other => {
                    return Err(bad(format!(
                        "opcode 0x{other:02x} at {} is not one torch.save uses: refused",
                        self.pos - 1
                    )));
                }
            }
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

    /// Call an allowed global. Nothing outside this match can be called.
    fn call(&mut self, callable: &Value, args: &Value) -> Result<Value> {
        let Value::Global(g) = callable else {
            return Err(bad(format!("REDUCE calls a {}", callable.kind(&self.arena))));
        };
        let a: Vec<Value> = items(&self.arena, args).ok_or_else(|| bad("REDUCE arguments are not a tuple"))?.to_vec();
        match (g.0.as_str(), g.1.as_str()) {
            ("collections", "OrderedDict") => {
                let mut pairs = Vec::new();
                if let Some(v) = a.first() {
                    for p in items(&self.arena, v).ok_or_else(|| bad("OrderedDict argument is not a list"))? {
                        match items(&self.arena, p) {
                            Some([k, v]) => pairs.push((k.clone(), v.clone())),
                            _ => return Err(bad("OrderedDict item is not a pair")),
                        }
                    }
                }
                self.new_container(Container::Dict(pairs))
            }
            ("torch._utils", "_rebuild_tensor_v2") => rebuild_tensor(&self.arena, &a, None),
            ("torch._utils", "_rebuild_tensor_v3") => {
                let dtype = match a.get(6) {
                    Some(Value::Dtype(d)) => *d,
                    _ => return Err(bad("_rebuild_tensor_v3 without a dtype")),
                };
                rebuild_tensor(&self.arena, &a, Some(dtype))
            }
            ("torch._utils", "_rebuild_parameter" | "_rebuild_parameter_with_state") => match a.first() {
                Some(Value::Tensor(t)) => {
                    let mut t = (**t).clone();
                    t.is_parameter = true;
                    t.requires_grad = a.get(1).and_then(Value::as_int).is_some_and(|v| v != 0);
                    Ok(Value::Tensor(Rc::new(t)))
                }
                _ => Err(bad("_rebuild_parameter of something that is not a tensor")),
            },
            ("torch._tensor", "_rebuild_from_type_v2") => match (a.first(), a.get(2)) {
                (Some(func), Some(inner)) => self.call(func, inner),
                _ => Err(bad("_rebuild_from_type_v2 with missing arguments")),
            },
            ("_codecs", "encode") => match a.first() {
                Some(Value::Str(s)) => Ok(Value::Bytes(s.chars().map(|c| c as u32 as u8).collect::<Vec<u8>>().into())),
                _ => Err(bad("_codecs.encode of something that is not a string")),
            },
            ("torch", "Size") => match a.first() {
                Some(v) => Ok(v.clone()),
                None => self.new_container(Container::Tuple(Vec::new())),
            },
            ("builtins" | "__builtin__", "set" | "frozenset") => {
                let members = a.first().and_then(|v| items(&self.arena, v)).map(<[Value]>::to_vec).unwrap_or_default();
                self.new_container(Container::Set(members))
            }
            ("builtins" | "__builtin__", "bytearray") => match a.first() {
                Some(Value::Bytes(b)) => Ok(Value::Bytes(b.clone())),
                None => Ok(Value::Bytes(Rc::from([]))),
                _ => Err(bad("bytearray of something that is not bytes")),
            },
            ("torch", "device") => {
                Ok(Value::Object(format!("device({})", a.first().and_then(Value::as_str).unwrap_or("?")).into()))
            }
            (m, n) => Err(Error::invalid(
                Rule::ForbiddenGlobal,
                format!("the pickle calls {m}.{n}, which cannot be called: refused"),
            )),
        }
    }
}

/// `('storage', <storage type>, key, location, numel)`, and before PyTorch 1.6 a sixth item:
/// `None` or a view `(view key, offset, size)` of the storage.
fn persistent(arena: &[Container], pid: &Value) -> Result<StorageRef> {
    let all = items(arena, pid).ok_or_else(|| bad("persistent id is not a tuple"))?;
    let (kind, ty, key, location, numel, view) = match all {
        [k, t, key, l, n] => (k, t, key, l, n, None),
        [k, t, key, l, n, v] => (k, t, key, l, n, Some(v)),
        _ => return Err(bad(format!("persistent id of {} items", all.len()))),
    };
    let view_offset = match view.and_then(|v| items(arena, v)) {
        Some(v) => int_arg(v.get(1).ok_or_else(|| bad("storage view without an offset"))?, "storage view offset")?,
        None => 0,
    };
    if kind.as_str() != Some("storage") {
        return Err(bad("persistent id is not a storage"));
    }
    let dtype = match ty {
        Value::Global(g) if g.1 == "UntypedStorage" => None,
        Value::Global(g) => {
            Some(storage_dtype(&g.1).ok_or_else(|| bad(format!("{}.{} is not a storage type", g.0, g.1)))?)
        }
        other => return Err(bad(format!("storage type is a {}", other.kind(arena)))),
    };
    let key = key.as_str().ok_or_else(|| bad("storage key is not a string"))?.to_string();
    let location = location.as_str().unwrap_or("").to_string();
    let numel = int_arg(numel, "storage size")?;
    Ok(StorageRef { key, dtype, numel, location, view_offset })
}

/// `(storage, storage_offset, size, stride, requires_grad, backward_hooks, ...)`.
fn rebuild_tensor(arena: &[Container], a: &[Value], dtype: Option<DType>) -> Result<Value> {
    let [storage, offset, size, stride, rest @ ..] = a else {
        return Err(bad("tensor rebuilt with too few arguments"));
    };
    let Value::Storage(s) = storage else {
        return Err(bad(format!("tensor rebuilt from a {} instead of a storage", storage.kind(arena))));
    };
    let dtype = dtype.or(s.dtype).ok_or_else(|| bad("untyped storage without a dtype"))?;
    let shape = ints(arena, size, "tensor size")?;
    let strides = ints(arena, stride, "tensor stride")?;
    if shape.len() != strides.len() {
        return Err(bad(format!("{} sizes but {} strides", shape.len(), strides.len())));
    }
    Ok(Value::Tensor(Rc::new(TensorRef {
        storage: (**s).clone(),
        dtype,
        storage_offset: crate::checked::add(s.view_offset, int_arg(offset, "storage offset")?, "storage offset")?,
        shape,
        strides,
        requires_grad: rest.first().and_then(Value::as_int).is_some_and(|v| v != 0),
        is_parameter: false,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn containers_are_shared_through_the_memo() {
        // l = []; memo[0] = l; d = {'a': l}; l.append(1)  -> d['a'] sees [1]
        let p = load(b"]q\x00}(X\x01\x00\x00\x00ah\x00uh\x00K\x01a0.").unwrap();
        let pairs = p.pairs(&p.root).unwrap();
        assert_eq!(p.items(&pairs[0].1).unwrap().len(), 1);
    }
}
