//! Exit codes of every command: 0 for success, 1 for a failure the file caused, 2 for usage. Run
//! on small files made in a temporary folder and on committed fixtures.

use crate::common::*;
use tensorfile::WriteOptions;

#[test]
fn exit_codes_tell_success_failure_and_usage_apart() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.zt");
    write(&good, &sample_tensors(), &WriteOptions::default());
    let garbage = dir.path().join("garbage.zt");
    std::fs::write(&garbage, b"not a tensor file at all").unwrap();

    assert_eq!(code(&tensorfile(&[&"info", &good])), 0);

    let o = tensorfile(&[&"info", &garbage]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).starts_with("tensorfile: ") && stderr(&o).contains("garbage.zt"), "{}", stderr(&o));
    assert!(stderr(&o).contains("[unknown-format]"), "{}", stderr(&o));
    let o = tensorfile(&[&"ls", &dir.path().join("missing.zt")]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("missing.zt"), "{}", stderr(&o));

    assert_eq!(code(&tensorfile(&[&"no-such-command"])), 2);
    assert_eq!(code(&tensorfile(&[&"info"])), 2);
    assert_eq!(code(&tensorfile(&[&"extract", &good])), 2, "-o is required");

    let convert = |extra: &[&str], out: &str| {
        let out = dir.path().join(out);
        let mut args: Vec<Arg<'_>> = vec![&"convert", &good, &out];
        args.extend(extra.iter().map(|s| s as Arg<'_>));
        tensorfile(&args)
    };
    let o = convert(&[], "out.xyz");
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("out.xyz"), "{}", stderr(&o));
    assert_eq!(code(&convert(&["--compress", "lz4"], "out.zt")), 2);
    assert_eq!(code(&convert(&["--compress", "zstd:99"], "out.zt")), 2);
    assert_eq!(code(&convert(&["--checksum", "md5"], "out.zt")), 2);
    assert!(!dir.path().join("out.zt").exists());
}
