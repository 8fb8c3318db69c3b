//! Tensors written for other tools: NumPy `.npy` files (what `extract` writes).

pub use crate::formats::numpy::{numpy_descr, write_npy};
