//! `tensorfile dump`: flatbuffer formats printed as JSON, enums by name. Run on small files made
//! in a temporary folder and on committed fixtures.

use crate::common::*;
use tensorfile::{DType, WriteOptions};

#[test]
fn dump_prints_the_program_with_enum_names() {
    let j = json_of(&ok(&[&"dump", &et_fixture("constants.pte")]));
    let v = &j["execution_plan"][0]["values"][0];
    assert_eq!(v["val_type"], "Tensor");
    assert_eq!(v["val"]["scalar_type"], "FLOAT");
    let ptd = json_of(&ok(&[&"dump", &et_fixture("external.ptd")]));
    assert!(ptd["named_data"].as_array().unwrap().len() == 4);
    let dir = tempfile::tempdir().unwrap();
    let zt = dir.path().join("x.zt");
    write(&zt, &[dense("a", DType::UInt8, &[1], vec![1])], &WriteOptions::default());
    assert_eq!(code(&tensorfile(&[&"dump", &zt])), 2, "dump is for flatbuffer formats");
}
