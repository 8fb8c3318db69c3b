//! HDF5: the files h5py, Keras and TensorFlow write.
//!
//! A bounded reader of the subset those producers use (superblock versions 0 to 3, object
//! headers v1 and v2, old-style and new-style groups, attributes, and the datasets of
//! `dataset/`); see docs/hdf5.md. Read only.
// Until the reader uses every part of the contract modules.
#![allow(dead_code)]

mod btree2;
mod checksum;
mod dataset;
mod io;
mod object_header;
