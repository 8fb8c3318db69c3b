//! The cases, one module per folder of the corpus.

mod gguf;
mod gguf_split;
mod hdf5;
mod hdf5_datasets;
mod hdf5_wild;
mod imatrix;
mod keras;
mod npy;
mod npz;
mod onnx;
mod pickle;
mod pt;
mod pt2;
mod ptd;
mod pte;
mod safetensors;
mod xnnpack;
mod zt;
mod zt1;
mod zt2;

use std::path::PathBuf;

use crate::case::{Case, Folder};

/// The committed fixtures (files made by the real tools), read-only.
pub struct Fixtures {
    dir: PathBuf,
}

impl Fixtures {
    pub fn new(dir: PathBuf) -> Fixtures {
        Fixtures { dir }
    }

    /// `tests/fixtures/<path>`.
    pub fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        let p = self.dir.join(path);
        std::fs::read(&p).map_err(|e| format!("fixture {}: {e}", p.display()))
    }
}

/// Every case of every folder.
pub fn all(fx: &Fixtures) -> Result<Vec<Case>, String> {
    let folders: Vec<Folder> = vec![
        zt::cases(fx)?,
        zt2::cases(fx)?,
        zt1::cases(fx)?,
        safetensors::cases(fx)?,
        gguf::cases(fx)?,
        gguf_split::cases(),
        npy::cases(fx)?,
        npz::cases(fx)?,
        hdf5::cases(fx)?,
        hdf5_datasets::cases(fx)?,
        keras::cases(fx)?,
        hdf5_wild::cases(fx)?,
        onnx::cases(fx)?,
        pte::cases(fx)?,
        xnnpack::cases(fx)?,
        ptd::cases(fx)?,
        pt::cases(fx)?,
        pt2::cases(fx)?,
        pickle::cases(fx)?,
        imatrix::cases(fx)?,
    ];
    Ok(folders.into_iter().flat_map(|f| f.cases).collect())
}
