//! The zTensor family. `v0_1`: zTensor v0.1 (`ZTEN0001`), the format of the seed reference
//! (pip `ztensor==0.1.4`).

pub mod v0_1;
