//! The globals a pickle may name, and what calling them builds: tensors and their storages,
//! `OrderedDict`, a few builtins. Nothing else can be named or called.

use std::rc::Rc;

use super::bad;
use super::value::{Container, StorageRef, TensorRef, Value, items, new_container};
use crate::error::{Error, Result, Rule};
use crate::model::DType;

/// The element type of a legacy storage class (`torch.FloatStorage`...).
pub(super) fn storage_dtype(name: &str) -> Option<DType> {
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

/// Whether `module` is a TorchScript class's module (`__torch__`, `__torch__.<path>`).
fn is_script_module(module: &str) -> bool {
    module == "__torch__" || module.starts_with("__torch__.")
}

/// The helpers of `torch.jit._pickle` that TorchScript archives name: each gives back its
/// first argument (a typed container, or a list).
const SCRIPT_HELPERS: &[&str] =
    &["restore_type_tag", "build_intlist", "build_tensorlist", "build_doublelist", "build_boollist"];

/// Whether a global may be named, and what it stands for. With `torchscript` (the pickles of a
/// TorchScript archive), also the archive's own classes (`__torch__.*`, built as records of
/// their state, never run) and the `torch.jit._pickle` helpers that give back their argument.
pub(super) fn allowed(module: &str, name: &str, torchscript: bool) -> Option<Value> {
    let global = || Value::Global(Rc::new((module.to_string(), name.to_string())));
    if torchscript && (is_script_module(module) || (module == "torch.jit._pickle" && SCRIPT_HELPERS.contains(&name))) {
        return Some(global());
    }
    match (module, name) {
        ("collections", "OrderedDict")
        | (
            "torch._utils",
            "_rebuild_tensor"
            | "_rebuild_tensor_v2"
            | "_rebuild_tensor_v3"
            | "_rebuild_parameter"
            | "_rebuild_parameter_with_state",
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

/// Call an allowed global, building into `arena`. Nothing outside this match can be called.
pub(super) fn call(arena: &mut Vec<Container>, callable: &Value, args: &Value) -> Result<Value> {
    let Value::Global(g) = callable else {
        return Err(bad(format!("REDUCE calls a {}", callable.kind(arena))));
    };
    let a: Vec<Value> = items(arena, args).ok_or_else(|| bad("REDUCE arguments are not a tuple"))?.to_vec();
    match (g.0.as_str(), g.1.as_str()) {
        // Only named in TorchScript archives (`allowed`): an object of the archive's own
        // class, nothing of it run; BUILD gives it its state.
        (m, _) if is_script_module(m) => new_container(arena, Container::Instance { class: g.clone(), state: None }),
        ("torch.jit._pickle", "restore_type_tag") => match a.as_slice() {
            [value, ..] => Ok(value.clone()),
            [] => Err(bad("restore_type_tag without a value")),
        },
        ("torch.jit._pickle", n) if SCRIPT_HELPERS.contains(&n) => match a.first() {
            Some(v @ Value::Container(_)) if items(arena, v).is_some() => Ok(v.clone()),
            _ => Err(bad(format!("torch.jit._pickle.{n} of something that is not a list"))),
        },
        ("collections", "OrderedDict") => {
            let mut pairs = Vec::new();
            if let Some(v) = a.first() {
                for p in items(arena, v).ok_or_else(|| bad("OrderedDict argument is not a list"))? {
                    match items(arena, p) {
                        Some([k, v]) => pairs.push((k.clone(), v.clone())),
                        _ => return Err(bad("OrderedDict item is not a pair")),
                    }
                }
            }
            new_container(arena, Container::Dict(pairs))
        }
        // PyTorch before 1.0: `(storage, storage_offset, size, stride)`, nothing more.
        ("torch._utils", "_rebuild_tensor") => match a.len() {
            4 => rebuild_tensor(arena, &a, None),
            n => Err(bad(format!("_rebuild_tensor with {n} arguments (it takes 4)"))),
        },
        ("torch._utils", "_rebuild_tensor_v2") => rebuild_tensor(arena, &a, None),
        ("torch._utils", "_rebuild_tensor_v3") => {
            let dtype = match a.get(6) {
                Some(Value::Dtype(d)) => *d,
                _ => return Err(bad("_rebuild_tensor_v3 without a dtype")),
            };
            rebuild_tensor(arena, &a, Some(dtype))
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
            (Some(func), Some(inner)) => call(arena, func, inner),
            _ => Err(bad("_rebuild_from_type_v2 with missing arguments")),
        },
        ("_codecs", "encode") => match a.first() {
            Some(Value::Str(s)) => Ok(Value::Bytes(s.chars().map(|c| c as u32 as u8).collect::<Vec<u8>>().into())),
            _ => Err(bad("_codecs.encode of something that is not a string")),
        },
        ("torch", "Size") => match a.first() {
            Some(v) => Ok(v.clone()),
            None => new_container(arena, Container::Tuple(Vec::new())),
        },
        ("builtins" | "__builtin__", "set" | "frozenset") => {
            let members = a.first().and_then(|v| items(arena, v)).map(<[Value]>::to_vec).unwrap_or_default();
            new_container(arena, Container::Set(members))
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

/// `('storage', <storage type>, key, location, numel)`, and before PyTorch 1.6 a sixth item:
/// `None` or a view `(view key, offset, size)` of the storage.
pub(super) fn persistent(arena: &[Container], pid: &Value) -> Result<StorageRef> {
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

/// `(storage, storage_offset, size, stride, requires_grad, backward_hooks, ...)`; before
/// PyTorch 1.0 the first four alone.
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
