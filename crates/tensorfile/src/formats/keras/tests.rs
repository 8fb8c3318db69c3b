//! Recognition from entry names and what is taken from `config.json` and `metadata.json`
//! (whole files are read in `tests/library/keras.rs` and the conformance cases).

use serde_json::json;

use super::config::{self, LayerWeights};
use super::looks_like;
use crate::error::Rule;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_keras_archive_is_told_from_other_zips_by_its_members() {
    assert!(looks_like(&names(&["metadata.json", "config.json", "model.weights.h5"])));
    assert!(looks_like(&names(&["config.json", "model.weights.h5", "assets/vocab.txt"])));
    // Weights missing or saved as npz: still a .keras file, refused at open with its reason.
    assert!(looks_like(&names(&["metadata.json", "config.json"])));
    assert!(looks_like(&names(&["metadata.json", "config.json", "model.weights.npz"])));
    assert!(!looks_like(&names(&["model.weights.h5"])));
    assert!(!looks_like(&names(&["config.json", "model.safetensors"])));
    assert!(!looks_like(&names(&["archive/data.pkl", "archive/config.json", "archive/metadata.json"])));
    assert!(!looks_like(&names(&["a.npy", "b.npy"])));
    assert!(!looks_like(&[]));
}

#[test]
fn a_sequential_config_gives_its_layers_and_how_it_was_compiled() {
    let config = json!({
        "module": "keras", "class_name": "Sequential",
        "config": {"name": "small", "layers": [
            {"module": "keras.layers", "class_name": "InputLayer", "config": {"name": "input_layer"}},
            {"module": "keras.layers", "class_name": "Dense", "config": {"name": "dense"}},
        ]},
        "build_config": {"input_shape": [null, 4]},
        "compile_config": {"optimizer": {"class_name": "Adam", "config": {}}, "loss": "mse"},
    });
    let model = config::model("config.json", &config).unwrap();
    assert_eq!(model.class_name, "Sequential");
    assert_eq!(model.name.as_deref(), Some("small"));
    let layers = model.layers.clone().unwrap();
    assert_eq!(layers[1], ("dense".to_string(), "Dense".to_string()));
    let weights = |name: &str| {
        (name == "dense").then(|| LayerWeights { group: "layers/dense".into(), tensors: 2, parameters: 10 })
    };
    let (described, text) = model.describe(Some("3.15.1"), weights, 5);
    assert_eq!(described["layer_count"], 2);
    assert_eq!(described["keras_version"], "3.15.1");
    assert_eq!(described["layers"][1]["parameters"], 10);
    assert!(described["layers"][0].get("weights").is_none());
    assert_eq!(described["compile"], json!({"optimizer": "Adam", "optimizer_tensors": 5, "loss": "mse"}));
    assert_eq!(described["input_shape"], json!([null, 4]));
    assert!(text.starts_with("Sequential \"small\", saved by Keras 3.15.1"), "{text}");
    assert!(text.contains("\n  input_layer  InputLayer\n"), "{text}");
    assert!(text.contains("\n  dense        Dense       10 parameters in 2 tensors (layers/dense)\n"), "{text}");
}

#[test]
fn a_subclassed_model_has_no_layer_list_and_a_loss_object_is_named_by_its_class() {
    let config = json!({"class_name": "MyModel", "config": null,
        "compile_config": {"loss": {"class_name": "MeanSquaredError", "config": {}}}});
    let model = config::model("config.json", &config).unwrap();
    assert!(model.layers.is_none() && model.name.is_none());
    let (described, text) = model.describe(None, |_| None, 0);
    assert!(described.get("layers").is_none());
    assert_eq!(described["compile"], json!({"loss": "MeanSquaredError"}));
    assert_eq!(text, "MyModel\ncompiled: loss \"MeanSquaredError\"\n");
}

#[test]
fn malformed_configs_and_metadata_name_the_member_and_the_rule() {
    let rule = |v: serde_json::Value| config::model("config.json", &v).unwrap_err().rule();
    assert_eq!(rule(json!([1, 2])), Some(Rule::BadJson));
    assert_eq!(rule(json!({"config": {}})), Some(Rule::MissingField));
    assert_eq!(rule(json!({"class_name": "M", "config": 3})), Some(Rule::BadField));
    assert_eq!(rule(json!({"class_name": "M", "config": {"layers": {}}})), Some(Rule::BadField));
    assert_eq!(rule(json!({"class_name": "M", "config": {"layers": [7]}})), Some(Rule::BadField));
    assert_eq!(rule(json!({"class_name": "M", "config": {"layers": [{"config": {}}]}})), Some(Rule::MissingField));
    let err = config::parse_json("config.json", b"{\"class_name\": ").unwrap_err();
    assert_eq!(err.rule(), Some(Rule::BadJson));
    assert!(err.detail().starts_with("config.json: "), "{err}");
    assert_eq!(config::parse_json("config.json", b"\xff").unwrap_err().rule(), Some(Rule::BadUtf8));
    // Nesting past serde_json's limit is an error, not a stack overflow.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(config::parse_json("config.json", deep.as_bytes()).unwrap_err().rule(), Some(Rule::BadJson));
    let err = config::metadata("metadata.json", &json!("3.15")).unwrap_err();
    assert_eq!(err.rule(), Some(Rule::BadJson));
    let pairs = config::metadata("metadata.json", &json!({"keras_version": "3.15.1", "date_saved": "x"})).unwrap();
    assert_eq!(pairs[0].0, "keras_version");
    assert_eq!(pairs[0].1.as_text(), Some("3.15.1"));
}
