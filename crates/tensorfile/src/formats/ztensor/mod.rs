//! The zTensor family. `v0_1`: zTensor v0.1 (`ZTEN0001`), the format of the seed reference
//! (pip `ztensor==0.1.4`); `v1`: zTensor 1.x (`ZTEN1000`, pip `ztensor` 1.x), read into the
//! structures of `v2`: zTensor 2 (`\x89ZT2\r\n\x1a\n`, the format of pip `ztensor` 2.x).
//! What they share: CBOR (`cbor`) and zstd frames decoded into exactly their declared size
//! (`zstd_frames`).

pub(crate) mod cbor;
pub mod v0_1;
pub mod v1;
pub mod v2;
pub(crate) mod zstd_frames;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::formats::Format;

    #[test]
    fn zt_paths_are_v0_1_unless_version_2_is_asked_for() {
        let zt = Path::new("out.zt");
        assert_eq!(Format::for_output(zt, None).unwrap(), Format::Zt);
        assert_eq!(Format::for_output(zt, Some("2")).unwrap(), Format::Zt2);
        assert_eq!(Format::for_output(zt, Some("0.1")).unwrap(), Format::Zt);
        let e = Format::for_output(Path::new("out.safetensors"), Some("2")).unwrap_err();
        assert!(e.to_string().contains("a zTensor version was given for out.safetensors"), "{e}");
        assert_eq!(Format::for_output(Path::new("out.safetensors"), None).unwrap(), Format::Safetensors);
        let e = Format::for_output(zt, Some("3")).unwrap_err();
        assert_eq!(e.to_string(), "unknown zTensor version \"3\" (expected 0.1 or 2)");
    }
}
