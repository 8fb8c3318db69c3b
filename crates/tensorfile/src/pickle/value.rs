//! What the machine builds.

use std::cell::RefCell;
use std::rc::Rc;

use crate::model::DType;

/// A storage named by a persistent id: `('storage', <type>, key, location, numel)`.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageRef {
    /// The record name under `data/`.
    pub key: String,
    /// The element type the storage type names; `None` for untyped (byte) storage.
    pub dtype: Option<DType>,
    /// Elements (bytes for untyped storage).
    pub numel: u64,
    pub location: String,
    /// Where this storage starts in the storage named by `key`, in elements: non-zero only
    /// for the storage views of the format before PyTorch 1.6.
    pub view_offset: u64,
}

/// A tensor rebuilt by `_rebuild_tensor_v2/v3`: a strided view of a storage.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorRef {
    pub storage: StorageRef,
    pub dtype: DType,
    /// In elements.
    pub storage_offset: u64,
    pub shape: Vec<u64>,
    /// In elements.
    pub strides: Vec<u64>,
    pub requires_grad: bool,
    /// Rebuilt through `_rebuild_parameter`.
    pub is_parameter: bool,
}

/// A pickled value. Containers are shared (as in Python), so a memo reference and the
/// original see the same contents.
#[derive(Debug, Clone)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An integer too large for 64 bits, as its little-endian two's complement bytes.
    BigInt(Rc<[u8]>),
    Float(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    List(Rc<RefCell<Vec<Value>>>),
    Tuple(Rc<[Value]>),
    /// Key/value pairs in insertion order (dict and OrderedDict).
    Dict(Rc<RefCell<Vec<(Value, Value)>>>),
    Set(Rc<RefCell<Vec<Value>>>),
    /// An allowed global not yet called (a rebuilder, a class).
    Global(Rc<(String, String)>),
    Dtype(DType),
    Storage(Rc<StorageRef>),
    Tensor(Rc<TensorRef>),
    /// The result of calling an allowed class that has no further meaning for us (a device,
    /// an empty hooks dict...): its name.
    Object(Rc<str>),
}

impl Value {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The items of a tuple or list.
    pub fn items(&self) -> Option<Vec<Value>> {
        match self {
            Value::Tuple(t) => Some(t.to_vec()),
            Value::List(l) => Some(l.borrow().clone()),
            _ => None,
        }
    }

    /// A short description for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::Dict(_) => "dict",
            Value::Set(_) => "set",
            Value::Global(_) => "global",
            Value::Dtype(_) => "dtype",
            Value::Storage(_) => "storage",
            Value::Tensor(_) => "tensor",
            Value::Object(_) => "object",
        }
    }
}
