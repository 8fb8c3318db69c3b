//! What the machine builds.
//!
//! Containers (lists, tuples, dicts, sets) live in an arena owned by [`Pickled`] and refer
//! to each other by index: a pickle can make containers that hold themselves, and with
//! reference counting such cycles would never be freed.

use std::rc::Rc;

use crate::error::{Error, Result, Rule};
use crate::limits::MAX_PICKLE_STACK;
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

/// A tensor rebuilt by `_rebuild_tensor` (before PyTorch 1.0) or `_rebuild_tensor_v2/v3`: a
/// strided view of a storage.
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

/// Index of a container in the arena.
pub type Id = usize;

/// A container of the arena.
#[derive(Debug, Clone)]
pub enum Container {
    List(Vec<Value>),
    Tuple(Vec<Value>),
    /// Key/value pairs in insertion order (dict and OrderedDict).
    Dict(Vec<(Value, Value)>),
    Set(Vec<Value>),
    /// An object of a TorchScript class (`__torch__.<qualname>`, read only from TorchScript
    /// archives): never constructed, its class named and the state its BUILD gave kept as
    /// it is (`None` before BUILD).
    Instance {
        /// The class's module and name, as the GLOBAL named them.
        class: Rc<(String, String)>,
        /// What BUILD gave it (a module's attributes: a dict).
        state: Option<Value>,
    },
}

/// A pickled value. Containers are references into the arena, so a memo reference and the
/// original see the same contents, as in Python.
#[derive(Debug, Clone)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An integer too large for 64 bits, as its little-endian two's complement bytes.
    BigInt(#[allow(dead_code, reason = "shown by Debug; nothing computes with integers this large")] Rc<[u8]>),
    Float(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    Container(Id),
    /// An allowed global not yet called (a rebuilder, a class).
    Global(Rc<(String, String)>),
    Dtype(DType),
    Storage(Rc<StorageRef>),
    Tensor(Rc<TensorRef>),
    /// The result of calling an allowed class that has no further meaning for us (a device,
    /// an empty hooks dict...): its name.
    Object(Rc<str>),
}

/// The result of a pickle: its top value and the containers it refers to.
#[derive(Debug, Clone)]
pub struct Pickled {
    pub root: Value,
    pub arena: Vec<Container>,
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

    /// A short description for error messages.
    pub fn kind(&self, arena: &[Container]) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::Container(id) => match arena.get(*id) {
                Some(Container::List(_)) => "list",
                Some(Container::Tuple(_)) => "tuple",
                Some(Container::Dict(_)) => "dict",
                Some(Container::Set(_)) => "set",
                Some(Container::Instance { .. }) => "scripted object",
                None => "container",
            },
            Value::Global(_) => "global",
            Value::Dtype(_) => "dtype",
            Value::Storage(_) => "storage",
            Value::Tensor(_) => "tensor",
            Value::Object(_) => "object",
        }
    }
}

impl Pickled {
    /// The items of a tuple, list or set.
    pub fn items(&self, v: &Value) -> Option<&[Value]> {
        items(&self.arena, v)
    }

    /// The pairs of a dict.
    pub fn pairs(&self, v: &Value) -> Option<&[(Value, Value)]> {
        match v {
            Value::Container(id) => match self.arena.get(*id) {
                Some(Container::Dict(d)) => Some(d),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The items of a tuple, list or set in `arena`.
pub fn items<'a>(arena: &'a [Container], v: &Value) -> Option<&'a [Value]> {
    match v {
        Value::Container(id) => match arena.get(*id) {
            Some(Container::List(l) | Container::Tuple(l) | Container::Set(l)) => Some(l),
            _ => None,
        },
        _ => None,
    }
}

/// A new container in `arena` (each costs input bytes, so the arena stays bounded).
pub(super) fn new_container(arena: &mut Vec<Container>, c: Container) -> Result<Value> {
    if arena.len() >= MAX_PICKLE_STACK {
        return Err(Error::invalid(Rule::TooManyEntries, "too many containers in the pickle"));
    }
    arena.push(c);
    Ok(Value::Container(arena.len() - 1))
}
