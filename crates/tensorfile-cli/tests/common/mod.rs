//! Running the `tensorfile` binary from the CLI tests.
#![allow(dead_code)] // each test file uses its own part

use std::ffi::OsStr;
use std::process::{Command, Output};

use serde_json::Value as Json;

pub type Arg<'a> = &'a dyn AsRef<OsStr>;

pub fn tensorfile(args: &[Arg<'_>]) -> Output {
    let args = args.iter().map(|a| a.as_ref());
    Command::new(env!("CARGO_BIN_EXE_tensorfile")).args(args).output().expect("the binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}

/// Run and expect exit 0, returning stdout.
pub fn ok(args: &[Arg<'_>]) -> String {
    let o = tensorfile(args);
    assert_eq!(code(&o), 0, "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    stdout(&o)
}

pub fn json_of(text: &str) -> Json {
    serde_json::from_str(text).expect("valid JSON")
}
