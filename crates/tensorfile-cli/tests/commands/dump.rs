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

#[test]
fn dump_delegates_prints_the_decoded_xnnpack_graphs() {
    let j = json_of(&ok(&[&"dump", &et_fixture("xnnpack_qc8.pte"), &"--delegates"]));
    let delegates = j.as_array().unwrap();
    assert_eq!(delegates.len(), 2);
    let ops: Vec<&str> = delegates
        .iter()
        .flat_map(|d| d["graph"]["nodes"].as_array().unwrap())
        .map(|n| n["operator"].as_str().unwrap())
        .collect();
    assert!(ops.contains(&"Conv2d") && ops.contains(&"FullyConnected"), "{ops:?}");
    let fc = &delegates[1];
    assert_eq!(
        (fc["method"].as_str(), fc["delegate"].as_u64(), fc["backend"].as_str()),
        (Some("forward"), Some(1), Some("XnnpackBackend"))
    );
    let weight = fc["graph"]["constants"].as_array().unwrap().iter().find(|c| c["datatype"] == "qcint8").unwrap();
    assert_eq!(weight["dtype"], "int8");
    assert_eq!(weight["shape"], serde_json::json!([4, 8]));
    assert_eq!(weight["quantization"]["kind"], "per_channel");
    assert_eq!(weight["quantization"]["scales"]["count"], 4);
    assert_eq!(fc["graph"]["operator_counts"]["FullyConnected"], 1);
    assert_eq!(code(&tensorfile(&[&"dump", &et_fixture("external.ptd"), &"--delegates"])), 2, "only programs");
}
