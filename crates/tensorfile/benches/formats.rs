//! `cargo bench -p tensorfile`: the library's hot paths on in-memory workloads made here,
//! against the Rust peers in the same run (the safetensors crate, the zTensor 0.1 reference
//! crate). `scripts/bench` measures whole files, cold caches, memory and the Python peers.

use std::hint::black_box;
use std::io::Cursor;

use divan::Bencher;
use tensorfile::DType;
use tensorfile::formats::{Compression, Format, WriteOptions, write_to_vec};
use tensorfile::model::{ChecksumKind, TensorData, TensorInfo};
use tensorfile::source::Bytes;

fn main() {
    divan::main();
}

/// `count` float32 tensors of `elements` each, deterministic.
fn tensors(count: usize, elements: u64) -> Vec<(TensorInfo, TensorData)> {
    (0..count)
        .map(|i| {
            let info = TensorInfo::dense(format!("layers.{}.weight.{i}", i / 100), DType::Float32, vec![elements]);
            let bytes: Vec<u8> = (0..elements * 4).map(|b| (b as u8).wrapping_mul(31).wrapping_add(i as u8)).collect();
            (info, TensorData::dense(Bytes::from_vec(bytes)))
        })
        .collect()
}

fn file(format: Format, count: usize, elements: u64) -> Vec<u8> {
    let options = WriteOptions { checksum: ChecksumKind::None, ..WriteOptions::default() };
    write_to_vec(format, &tensors(count, elements), &options).unwrap()
}

fn sum(bytes: &[u8]) -> u64 {
    bytes.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().unwrap())).fold(0, u64::wrapping_add)
}

/// Opening and listing 10,000 small tensors: index work only.
mod open_many {
    use super::*;

    #[divan::bench]
    fn tensorfile_safetensors(b: Bencher) {
        let data = Bytes::from_vec(file(Format::Safetensors, 10_000, 256));
        b.bench(|| tensorfile::OpenOptions::new().open_bytes(black_box(data.clone())).unwrap().entries().len());
    }

    #[divan::bench]
    fn safetensors_crate(b: Bencher) {
        let data = file(Format::Safetensors, 10_000, 256);
        b.bench(|| safetensors::SafeTensors::deserialize(black_box(&data)).unwrap().len());
    }

    #[divan::bench]
    fn tensorfile_zt(b: Bencher) {
        let data = Bytes::from_vec(file(Format::Zt, 10_000, 256));
        b.bench(|| tensorfile::OpenOptions::new().open_bytes(black_box(data.clone())).unwrap().entries().len());
    }

    #[divan::bench]
    fn ztensor_crate(b: Bencher) {
        let data = file(Format::Zt, 10_000, 256);
        b.bench(|| ztensor::ZTensorReader::new(Cursor::new(black_box(&data[..]))).unwrap().list_tensors().len());
    }
}

/// Reading every byte of 64 tensors of 1 MiB.
mod read_all {
    use super::*;

    #[divan::bench]
    fn tensorfile_zt(b: Bencher) {
        let f = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(file(Format::Zt, 64, 1 << 18))).unwrap();
        b.bench(|| (0..64).map(|i| sum(f.read_index(i).unwrap().as_dense().unwrap())).fold(0, u64::wrapping_add));
    }

    #[divan::bench]
    fn ztensor_crate(b: Bencher) {
        let data = file(Format::Zt, 64, 1 << 18);
        let mut r = ztensor::ZTensorReader::new(Cursor::new(&data[..])).unwrap();
        let names: Vec<String> = r.list_tensors().iter().map(|t| t.name.clone()).collect();
        b.bench_local(|| {
            names.iter().map(|n| sum(&r.read_raw_tensor_data_by_name(n).unwrap())).fold(0, u64::wrapping_add)
        });
    }

    #[divan::bench]
    fn tensorfile_safetensors(b: Bencher) {
        let f =
            tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(file(Format::Safetensors, 64, 1 << 18))).unwrap();
        b.bench(|| (0..64).map(|i| sum(f.read_index(i).unwrap().as_dense().unwrap())).fold(0, u64::wrapping_add));
    }

    #[divan::bench]
    fn safetensors_crate(b: Bencher) {
        let data = file(Format::Safetensors, 64, 1 << 18);
        let st = safetensors::SafeTensors::deserialize(&data).unwrap();
        let names = st.names();
        b.bench(|| names.iter().map(|n| sum(st.tensor(n).unwrap().data())).fold(0, u64::wrapping_add));
    }
}

/// Writing 64 MiB as `.zt`: raw, and zstd on the thread pool against one thread.
mod write_zt {
    use super::*;

    fn write(compression: Compression) -> usize {
        let options = WriteOptions { compression, checksum: ChecksumKind::None, ..WriteOptions::default() };
        write_to_vec(Format::Zt, black_box(&WORKLOAD.with(|w| w.clone())), &options).unwrap().len()
    }

    thread_local! {
        static WORKLOAD: Vec<(TensorInfo, TensorData)> = tensors(16, 1 << 20);
    }

    #[divan::bench(sample_count = 10)]
    fn raw() -> usize {
        write(Compression::None)
    }

    #[divan::bench(sample_count = 10)]
    fn zstd_all_threads() -> usize {
        write(Compression::Zstd(3))
    }

    #[divan::bench(sample_count = 10)]
    fn zstd_one_thread() -> usize {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        pool.install(|| write(Compression::Zstd(3)))
    }
}

/// Casting 64 MiB of float32 (16 Mi elements of every exponent) as `convert --dtype` does: on
/// the thread pool and on one thread, against the `half` crate's conversion on one thread.
mod cast {
    use super::*;
    use tensorfile::model::cast::{cast, cast_into};

    /// Float32 bits of every exponent (NaNs and infinities among them), deterministic.
    fn floats() -> Vec<u8> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        (0..1u32 << 24)
            .flat_map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((state >> 32) as u32).to_le_bytes()
            })
            .collect()
    }

    thread_local! {
        static F32: Vec<u8> = floats();
        static BF16: Vec<u8> = cast(&floats(), DType::Float32, DType::BFloat16).unwrap();
    }

    #[divan::bench(args = [DType::BFloat16, DType::Float16, DType::Float8E4M3Fn, DType::Float8E5M2], sample_count = 10)]
    fn from_float32(to: DType) -> usize {
        F32.with(|f| cast(black_box(f), DType::Float32, to).unwrap().len())
    }

    /// The kernel alone: into a buffer already written (no page faults of a new one).
    #[divan::bench(args = [DType::BFloat16, DType::Float8E4M3Fn], sample_count = 10)]
    fn from_float32_into_buffer(b: Bencher, to: DType) {
        let mut out = vec![1u8; 1 << 25];
        F32.with(|f| {
            let n = f.len() / 4 * to.size().unwrap() as usize;
            b.bench_local(|| cast_into(black_box(f), DType::Float32, to, &mut out[..n]).unwrap())
        });
    }

    #[divan::bench(sample_count = 10)]
    fn bfloat16_to_float32() -> usize {
        BF16.with(|b| cast(black_box(b), DType::BFloat16, DType::Float32).unwrap().len())
    }

    #[divan::bench(sample_count = 10)]
    fn to_bfloat16_one_thread() -> usize {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        F32.with(|f| pool.install(|| cast(black_box(f), DType::Float32, DType::BFloat16).unwrap().len()))
    }

    #[divan::bench(sample_count = 10)]
    fn half_crate_to_bfloat16_one_thread() -> usize {
        F32.with(|f| {
            let out: Vec<u8> = black_box(f)
                .chunks_exact(4)
                .flat_map(|c| half::bf16::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_le_bytes())
                .collect();
            out.len()
        })
    }
}
