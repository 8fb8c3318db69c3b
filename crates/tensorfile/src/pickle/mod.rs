//! A restricted pickle machine: it reads the pickles `torch.save` writes and builds values
//! from them, executing nothing.
//!
//! Only the opcodes those pickles use are understood, and only the globals PyTorch's own
//! weights-only loader allows (tensor and parameter rebuilders, storage types, dtypes,
//! `OrderedDict`, a few builtins) may be named; a pickle naming any other global is refused
//! with that global in the message. The memo, the stack and the work of flattening the result
//! are bounded by the size of the input.
//!
//! The pickles of TorchScript archives (`torch.jit.save`) are read with [`load_torchscript`],
//! which also takes the archive's own classes (`__torch__.*`): their objects are records of
//! the class's name and the state BUILD gave them, never constructed or run.

mod globals;
mod machine;
mod opcode;
mod value;

use crate::error::{Error, Rule};

pub use machine::{Loaded, load, load_prefix, load_torchscript};
pub use value::{Container, Pickled, TensorRef, Value};
#[cfg(any(test, feature = "internals"))]
pub use value::{Id, StorageRef, items};

/// The error for a malformed pickle (`BadPickle`), shared by the opcode loop and the globals.
fn bad(detail: impl Into<String>) -> Error {
    Error::invalid(Rule::BadPickle, detail)
}
