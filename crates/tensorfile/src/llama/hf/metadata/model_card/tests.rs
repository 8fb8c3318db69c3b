use super::*;
use crate::model::TypedArray;

/// The key/values of `derive` for a folder `name` holding `config` and `readme`, rendered
/// as the generator printed gguf-py's (`key TYPE json`, one a line), or `ERR`.
fn render(name: &str, config: &str, readme: &str, total: i64) -> String {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join(name);
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("config.json"), config).unwrap();
    std::fs::write(dir.join("README.md"), readme).unwrap();
    let config: serde_json::Value = serde_json::from_str(config).unwrap();
    let m = match super::super::derive(&dir, &config, None, (total, total, 0, 0), &super::super::Given::default()) {
        Ok(m) => m,
        Err(e) => return format!("ERR {}", e.message()),
    };
    let lines: Vec<String> = m
        .to_kvs()
        .into_iter()
        .map(|(k, v)| match v {
            MetaValue::Text(s) => format!("{k} STRING {}", serde_json::to_string(&s).unwrap()),
            MetaValue::Number(Number::U32(n)) => format!("{k} UINT32 {n}"),
            MetaValue::TypedArray(TypedArray::Text(v)) => {
                format!("{k} ARRAY {}", serde_json::to_string(&v).unwrap())
            }
            other => format!("{k} {other:?}"),
        })
        .collect();
    lines.join("\n")
}

/// Folder name, `config.json`, `README.md`, total parameters, and what gguf-py's
/// `Metadata.load` plus the converter's fallbacks wrote through `set_gguf_meta_model` (`ERR`:
/// gguf-py failed; `REFUSED`: gguf-py wrote a non-text array or read a merge key, which this
/// refuses).
const CARDS: &[(&str, &str, &str, i64, &str)] = &[
    (
        "Llama-3.1-8B-Instruct",
        r#"{"_name_or_path": "meta-llama/Llama-3.1-8B-Instruct"}"#,
        "---\nlanguage:\n- en\n- de\n- fr\n- it\n- pt\n- hi\n- es\n- th\nlicense: llama3.1\npipeline_tag: text-generation\ntags:\n- facebook\n- meta\n- pytorch\n- llama\n- llama-3\nbase_model: meta-llama/Meta-Llama-3.1-8B\nextra_gated_prompt: >-\n  ### LLAMA 3.1 COMMUNITY LICENSE AGREEMENT\n\n  Llama 3.1 Version Release Date: July 23, 2024\nextra_gated_fields:\n  First Name: text\n  Date of birth: date_picker\n  Country: country\n  geo: ip_location\n  By clicking Submit below I accept the terms: checkbox\nextra_gated_button_content: Submit\n---\n\n## Model Information\n",
        8030261248,
        "general.name STRING \"Llama 3.1 8B Instruct\"\ngeneral.organization STRING \"Meta Llama\"\ngeneral.finetune STRING \"Instruct\"\ngeneral.basename STRING \"Llama-3.1\"\ngeneral.size_label STRING \"8B\"\ngeneral.license STRING \"llama3.1\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"Meta Llama 3.1 8B\"\ngeneral.base_model.0.organization STRING \"Meta Llama\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/meta-llama/Meta-Llama-3.1-8B\"\ngeneral.tags ARRAY [\"facebook\",\"meta\",\"pytorch\",\"llama\",\"llama-3\",\"text-generation\"]\ngeneral.languages ARRAY [\"en\",\"de\",\"fr\",\"it\",\"pt\",\"hi\",\"es\",\"th\"]",
    ),
    (
        "Qwen2.5-0.5B-Instruct",
        r#"{}"#,
        "---\nlicense: apache-2.0\nlicense_link: https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/blob/main/LICENSE\nlanguage:\n- en\npipeline_tag: text-generation\nbase_model: Qwen/Qwen2.5-0.5B\ntags:\n- chat\nlibrary_name: transformers\n---\n\n# Qwen2.5-0.5B-Instruct\n",
        494032768,
        "general.name STRING \"Qwen2.5 0.5B Instruct\"\ngeneral.finetune STRING \"Instruct\"\ngeneral.basename STRING \"Qwen2.5\"\ngeneral.size_label STRING \"0.5B\"\ngeneral.license STRING \"apache-2.0\"\ngeneral.license.link STRING \"https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/blob/main/LICENSE\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"Qwen2.5 0.5B\"\ngeneral.base_model.0.organization STRING \"Qwen\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/Qwen/Qwen2.5-0.5B\"\ngeneral.tags ARRAY [\"chat\",\"text-generation\"]\ngeneral.languages ARRAY [\"en\"]",
    ),
    (
        "Mistral-7B-Instruct-v0.3",
        r#"{"_name_or_path": "mistralai/Mistral-7B-Instruct-v0.3"}"#,
        "---\nlicense: apache-2.0\nbase_model: mistralai/Mistral-7B-v0.3\nextra_gated_description: If you want to learn more about how we process your personal data, please read our <a href=\"https://mistral.ai/terms/\">Privacy Policy</a>.\n---\n\n# Model Card\n",
        7248023552,
        "general.name STRING \"Mistral 7B Instruct v0.3\"\ngeneral.version STRING \"v0.3\"\ngeneral.organization STRING \"Mistralai\"\ngeneral.finetune STRING \"Instruct\"\ngeneral.basename STRING \"Mistral\"\ngeneral.size_label STRING \"7B\"\ngeneral.license STRING \"apache-2.0\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"Mistral 7B v0.3\"\ngeneral.base_model.0.version STRING \"v0.3\"\ngeneral.base_model.0.organization STRING \"Mistralai\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/mistralai/Mistral-7B-v0.3\"",
    ),
    (
        "my-finetune",
        r#"{}"#,
        "---\nbase_model:\n- meta-llama/Llama-3.2-1B\n- https://huggingface.co/Qwen/Qwen2.5-1.5B-Instruct\n- https://example.com/model\n- name: Custom Base\n  organization: Someone\n  repo_url: https://x.y/z\n  version: v2\n- 42\ndatasets:\n- HuggingFaceH4/ultrachat_200k\n- teknium/OpenHermes-2.5\n- https://huggingface.co/datasets/foo/bar\n- https://huggingface.co/foo/bar-v1.2\n- local-data\nlanguage:\n- en\nlibrary_name: peft\ntags:\n- trl\n- sft\n- generated_from_trainer\nmodel-index:\n- name: my-finetune\n  results:\n  - task:\n      type: text-generation\n    dataset:\n      name: MMLU\n      type: cais/mmlu\n    metrics:\n    - type: acc\n      value: 65.3\n---\n",
        1100048384,
        "general.name STRING \"My Finetune\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 5\ngeneral.base_model.0.name STRING \"Llama 3.2 1B\"\ngeneral.base_model.0.organization STRING \"Meta Llama\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/meta-llama/Llama-3.2-1B\"\ngeneral.base_model.1.name STRING \"Qwen2.5 1.5B Instruct\"\ngeneral.base_model.1.organization STRING \"Qwen\"\ngeneral.base_model.1.repo_url STRING \"https://huggingface.co/Qwen/Qwen2.5-1.5B-Instruct\"\ngeneral.base_model.2.repo_url STRING \"https://example.com/model\"\ngeneral.base_model.3.name STRING \"Custom Base\"\ngeneral.base_model.3.version STRING \"v2\"\ngeneral.base_model.3.organization STRING \"Someone\"\ngeneral.base_model.3.repo_url STRING \"https://x.y/z\"\ngeneral.dataset.count UINT32 5\ngeneral.dataset.0.name STRING \"Ultrachat_200K\"\ngeneral.dataset.0.organization STRING \"HuggingFaceH4\"\ngeneral.dataset.0.repo_url STRING \"https://huggingface.co/HuggingFaceH4/ultrachat_200k\"\ngeneral.dataset.1.name STRING \"OpenHermes 2.5\"\ngeneral.dataset.1.version STRING \"2.5\"\ngeneral.dataset.1.organization STRING \"Teknium\"\ngeneral.dataset.1.repo_url STRING \"https://huggingface.co/teknium/OpenHermes-2.5\"\ngeneral.dataset.2.repo_url STRING \"https://huggingface.co/datasets/foo/bar\"\ngeneral.dataset.3.name STRING \"Bar v1.2\"\ngeneral.dataset.3.version STRING \"v1.2\"\ngeneral.dataset.3.organization STRING \"Foo\"\ngeneral.dataset.3.repo_url STRING \"https://huggingface.co/foo/bar-v1.2\"\ngeneral.dataset.4.name STRING \"Local Data\"\ngeneral.tags ARRAY [\"trl\",\"sft\",\"generated_from_trainer\"]\ngeneral.languages ARRAY [\"en\"]",
    ),
    (
        "norway",
        r#"{}"#,
        "---\nlanguage:\n- en\n- no\n- nb\nlicense: mit\n---\n",
        1100048384,
        "general.name STRING \"Norway\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit\"\ngeneral.languages ARRAY [\"en\",\"no\",\"nb\"]",
    ),
    ("norway-flow", r#"{}"#, "---\nlanguage: [en, no]\n---\n", 1100048384, "ERR ValueError"),
    (
        "tabs",
        r#"{}"#,
        "---\nlicense: mit\ntags:\n\t- a\n\t- b\nbase_model:\n\t- org/Model-7B-v1\n---\n",
        1100048384,
        "general.name STRING \"Tabs\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"Model 7B v1\"\ngeneral.base_model.0.version STRING \"v1\"\ngeneral.base_model.0.organization STRING \"Org\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/org/Model-7B-v1\"\ngeneral.tags ARRAY [\"a\",\"b\"]",
    ),
    (
        "empty-fm",
        r#"{}"#,
        "---\n---\n# Title\n",
        1100048384,
        "general.name STRING \"Empty Fm\"\ngeneral.size_label STRING \"1.1B\"",
    ),
    (
        "list-fm",
        r#"{}"#,
        "---\n- a\n- b\n---\n",
        1100048384,
        "general.name STRING \"List Fm\"\ngeneral.size_label STRING \"1.1B\"",
    ),
    (
        "scalar-fm",
        r#"{}"#,
        "---\njust text\n---\n",
        1100048384,
        "general.name STRING \"Scalar Fm\"\ngeneral.size_label STRING \"1.1B\"",
    ),
    (
        "multi-license",
        r#"{}"#,
        "---\nlicense: [mit, apache-2.0]\nlanguage: en\n---\n",
        1100048384,
        "general.name STRING \"Multi License\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit,apache-2.0\"\ngeneral.languages ARRAY [\"en\"]",
    ),
    (
        "dates",
        r#"{}"#,
        "---\nlicense: other\ncreated: 2024-01-15\nupdated: 2024-01-15 10:20:30\nversion: '2024-01-15'\n---\n",
        1100048384,
        "general.name STRING \"Dates\"\ngeneral.version STRING \"2024-01-15\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"other\"",
    ),
    ("date-version", r#"{}"#, "---\nversion: 2024-01-15\n---\n", 1100048384, "ERR TypeError"),
    (
        "bool-fields",
        r#"{}"#,
        "---\ninference: false\nversion: 0\nauthor: false\nlicense: ~\ntags: yes\n---\n",
        1100048384,
        "general.name STRING \"Bool Fields\"\ngeneral.size_label STRING \"1.1B\"",
    ),
    ("bool-true", r#"{}"#, "---\nauthor: yes\n---\n", 1100048384, "ERR TypeError"),
    ("float-version", r#"{}"#, "---\nversion: 1.0\n---\n", 1100048384, "ERR TypeError"),
    (
        "unicode",
        r#"{}"#,
        "---\nname: Modèle Français 🚀\nauthor: 山田太郎\nlanguage:\n- fr\n- ja\ndescription: \"Un modèle \\u00e9crit\"\ntags: [français, \"日本語\"]\n---\n",
        1100048384,
        "general.name STRING \"Modèle Français 🚀\"\ngeneral.author STRING \"山田太郎\"\ngeneral.description STRING \"Un modèle écrit\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.tags ARRAY [\"français\",\"日本語\"]\ngeneral.languages ARRAY [\"fr\",\"ja\"]",
    ),
    (
        "aliases",
        r#"{}"#,
        "---\nmodel_name: Aliased Name\nmodel_creator: TheBloke\nmodel_type: mistral\nmodel_version: v3\nurl: https://example.com\nmodel_doi: 10.1/x\nuuid: abc-123\nrepo_url: https://github.com/x/y\nquantized_by: nobody\nlicense_name: custom\nlicense_link: LICENSE.md\n---\n",
        1100048384,
        "general.name STRING \"Aliased Name\"\ngeneral.author STRING \"TheBloke\"\ngeneral.version STRING \"v3\"\ngeneral.basename STRING \"mistral\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license.name STRING \"custom\"\ngeneral.license.link STRING \"LICENSE.md\"\ngeneral.source.url STRING \"https://example.com\"\ngeneral.source.doi STRING \"10.1/x\"\ngeneral.source.uuid STRING \"abc-123\"\ngeneral.source.repo_url STRING \"https://github.com/x/y\"",
    ),
    (
        "name-null",
        r#"{}"#,
        "---\nname: null\nmodel_name: From Model Name\nsize_label: 7B\nbasename: Base\nfinetune: ''\n---\n",
        1100048384,
        "general.name STRING \"From Model Name\"\ngeneral.basename STRING \"Base\"\ngeneral.size_label STRING \"7B\"",
    ),
    (
        "base-null",
        r#"{}"#,
        "---\nbase_model: null\ndatasets: {}\n---\n",
        1100048384,
        "general.name STRING \"Base Null\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 0\ngeneral.dataset.count UINT32 0",
    ),
    (
        "base-models-key",
        r#"{}"#,
        "---\nbase_models: org/A-1B\ndataset: single/Set-v2\n---\n",
        1100048384,
        "general.name STRING \"Base Models Key\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"A 1B\"\ngeneral.base_model.0.organization STRING \"Org\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/org/A-1B\"\ngeneral.dataset.count UINT32 1\ngeneral.dataset.0.name STRING \"Set v2\"\ngeneral.dataset.0.version STRING \"v2\"\ngeneral.dataset.0.organization STRING \"Single\"\ngeneral.dataset.0.repo_url STRING \"https://huggingface.co/single/Set-v2\"",
    ),
    (
        "pipeline-only",
        r#"{"_name_or_path": "org/Thing-3B-chat"}"#,
        "---\npipeline_tag: text-generation\nlanguages: en\nlanguage: [de, fr]\n---\n",
        3000000000,
        "general.name STRING \"Thing 3B Chat\"\ngeneral.organization STRING \"Org\"\ngeneral.finetune STRING \"chat\"\ngeneral.basename STRING \"Thing\"\ngeneral.size_label STRING \"3B\"\ngeneral.tags ARRAY [\"text-generation\"]\ngeneral.languages ARRAY [\"en\",\"de\",\"fr\"]",
    ),
    (
        "block-scalars",
        r#"{}"#,
        "---\ndescription: |\n  Line one\n  Line two\nauthor: >\n  folded\n  text\ntags:\n- \"quoted: yes\"\n- 'single ''q'''\n---\n",
        1100048384,
        "general.name STRING \"Block Scalars\"\ngeneral.author STRING \"folded text\\n\"\ngeneral.description STRING \"Line one\\nLine two\\n\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.tags ARRAY [\"quoted: yes\",\"single 'q'\"]",
    ),
    (
        "crlf",
        r#"{}"#,
        "---\r\nlicense: mit\r\ntags:\r\n- x\r\n---\r\n",
        1100048384,
        "general.name STRING \"Crlf\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit\"\ngeneral.tags ARRAY [\"x\"]",
    ),
    (
        "no-end",
        r#"{}"#,
        "---\nlicense: bsd\nlanguage:\n- no\n",
        1100048384,
        "general.name STRING \"No End\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"bsd\"\ngeneral.languages ARRAY [\"no\"]",
    ),
    (
        "anchors",
        r#"{}"#,
        "---\nbase_model: &b org/M-7B\nextra: *b\nlicense: &l mit\n---\n",
        1100048384,
        "general.name STRING \"Anchors\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"M 7B\"\ngeneral.base_model.0.organization STRING \"Org\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/org/M-7B\"",
    ),
    (
        "dup-keys",
        r#"{}"#,
        "---\nlicense: mit\nlicense: apache-2.0\n---\n",
        1100048384,
        "general.name STRING \"Dup Keys\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"apache-2.0\"",
    ),
    (
        "hex-zero",
        r#"{}"#,
        "---\nversion: 0x0\nauthor: 0.0\nname: []\n---\n",
        1100048384,
        "general.size_label STRING \"1.1B\"",
    ),
    ("on-off", r#"{}"#, "---\ntags:\n- on\n- off\n---\n", 1100048384, "REFUSED"),
    ("int-tags", r#"{}"#, "---\ntags: [1, 2]\n---\n", 1100048384, "REFUSED"),
    ("bad-yaml", r#"{}"#, "---\nlicense: [mit\n---\n", 1100048384, "ERR ParserError"),
    ("base-dict-odd", r#"{}"#, "---\nbase_model:\n- name: 5\n---\n", 1100048384, "ERR TypeError"),
    (
        "base-dict-falsy",
        r#"{}"#,
        "---\nbase_model:\n- name: 0\n  author: ''\n  doi: x\n  other: y\n---\n",
        1100048384,
        "general.name STRING \"Base Dict Falsy\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.doi STRING \"x\"",
    ),
    (
        "weird-url",
        r#"{}"#,
        "---\nbase_model: https://huggingfaceXco/huggingface.co/b\ndatasets: ssh://huggingface.co/a/b\n---\n",
        1100048384,
        "general.name STRING \"Weird Url\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"B\"\ngeneral.base_model.0.organization STRING \"Huggingface.Co\"\ngeneral.base_model.0.repo_url STRING \"https://huggingfaceXco/huggingface.co/b\"\ngeneral.dataset.count UINT32 1\ngeneral.dataset.0.repo_url STRING \"ssh://huggingface.co/a/b\"",
    ),
    ("bad-date", r#"{}"#, "---\nother: 2024-13-45\n---\n", 1100048384, "ERR ValueError"),
    (
        "explicit-str",
        r#"{}"#,
        "---\nversion: !!str 1.0\n---\n",
        1100048384,
        "general.name STRING \"Explicit Str\"\ngeneral.version STRING \"1.0\"\ngeneral.size_label STRING \"1.1B\"",
    ),
    ("second-doc", r#"{}"#, "---\nlicense: mit\n...\nfoo: 1\n---\n", 1100048384, "ERR ParserError"),
    (
        "doc-end",
        r#"{}"#,
        "---\nlicense: mit\n...\n---\n",
        1100048384,
        "general.name STRING \"Doc End\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit\"",
    ),
    (
        "flow-map",
        r#"{}"#,
        "---\nbase_model: {name: X, version: v1}\nlicense: {a: b}\n---\n",
        1100048384,
        "ERR TypeError",
    ),
    ("merge-key", r#"{}"#, "---\na: &a {name: X}\nbase_model:\n- <<: *a\n---\n", 1100048384, "REFUSED"),
    (
        "flow-urls",
        r#"{}"#,
        "---\nbase_model: [https://huggingface.co/a/B-7B, org/x:y]\ndatasets: [a/b, c/d]\n---\n",
        1100048384,
        "general.name STRING \"Flow Urls\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 2\ngeneral.base_model.0.name STRING \"B 7B\"\ngeneral.base_model.0.organization STRING \"A\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/a/B-7B\"\ngeneral.base_model.1.name STRING \"X:Y\"\ngeneral.base_model.1.organization STRING \"Org\"\ngeneral.base_model.1.repo_url STRING \"https://huggingface.co/org/x:y\"\ngeneral.dataset.count UINT32 2\ngeneral.dataset.0.name STRING \"B\"\ngeneral.dataset.0.organization STRING \"A\"\ngeneral.dataset.0.repo_url STRING \"https://huggingface.co/a/b\"\ngeneral.dataset.1.name STRING \"D\"\ngeneral.dataset.1.organization STRING \"C\"\ngeneral.dataset.1.repo_url STRING \"https://huggingface.co/c/d\"",
    ),
    (
        "multiline",
        r#"{}"#,
        "---\ndescription: this is a\n  long plain\n\n  scalar\nname: \"quoted\n  folded\"\n# comment\nlicense: Apache 2.0  # trailing comment\n---\n",
        1100048384,
        "general.name STRING \"quoted folded\"\ngeneral.description STRING \"this is a long plain\\nscalar\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"Apache 2.0\"",
    ),
    (
        "indented-seq",
        r#"{}"#,
        "---\nlanguage:\n  - en\n  - no\ntags:\n    - a\n---\n",
        1100048384,
        "general.name STRING \"Indented Seq\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.tags ARRAY [\"a\"]\ngeneral.languages ARRAY [\"en\",\"no\"]",
    ),
    (
        "empty-values",
        r#"{}"#,
        "---\nlicense:\nversion:\ntags:\nbase_model:\n---\n",
        1100048384,
        "general.name STRING \"Empty Values\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 0",
    ),
    (
        "explicit-doc",
        r#"{}"#,
        "---\n--- \nlicense: mit\n---\n",
        1100048384,
        "general.name STRING \"Explicit Doc\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit\"",
    ),
    (
        "colon-keys",
        r#"{}"#,
        "---\nmodel-index:\n- name: x\n  results: []\nwidget:\n- text: 'Hi: there'\n  example_title: \"A: b\"\nlicense: cc-by-4.0\n---\n",
        1100048384,
        "general.name STRING \"Colon Keys\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"cc-by-4.0\"",
    ),
];

#[test]
fn cards_match_gguf_py() {
    let mut wrong = Vec::new();
    for &(name, config, readme, total, want) in CARDS {
        let got = render(name, config, readme, total);
        let ok = if want.starts_with("ERR") || want == "REFUSED" { got.starts_with("ERR") } else { got == want };
        if !ok {
            wrong.push(format!("{name}:\n got: {got}\nwant: {want}"));
        }
    }
    assert!(wrong.is_empty(), "{} of {} differ:\n{}", wrong.len(), CARDS.len(), wrong.join("\n"));
}

#[test]
fn refusals_name_the_card_and_key() {
    let got = render("m", "{}", "---\nversion: 1.0\n---\n", 0);
    assert!(got.contains("README.md") && got.contains("version") && got.contains("float"), "{got}");
    let got = render("m", "{}", "---\ntags: [a, 1]\n---\n", 0);
    assert!(got.contains("README.md") && got.contains("tags"), "{got}");
}

#[test]
fn plain_scalars_resolve_as_pyyaml() {
    let r = |s: &str| resolve_plain(s.to_string());
    for s in ["", "~", "null", "Null", "NULL"] {
        assert_eq!(r(s), Ok(Yaml::Null), "{s:?}");
    }
    for (s, t) in [("yes", true), ("No", false), ("ON", true), ("off", false), ("True", true), ("FALSE", false)] {
        assert_eq!(r(s), Ok(Yaml::Other("bool", t)), "{s:?}");
    }
    for (s, t) in [("0", false), ("-0", false), ("00", false), ("0x0", false), ("0b0_0", false), ("1_000", true)] {
        assert_eq!(r(s), Ok(Yaml::Other("int", t)), "{s:?}");
    }
    for (s, t) in [("0x1F", true), ("0o17", true), ("1:30", true), ("1:0:0", true), ("017", true), ("0_", false)] {
        let want = if s == "0o17" { Yaml::Str(s.into()) } else { Yaml::Other("int", t) };
        assert_eq!(r(s), Ok(want), "{s:?}");
    }
    for (s, t) in [("1.0", true), ("0.0", false), ("-0.0_0", false), (".inf", true), ("-.INF", true), (".NaN", true)] {
        assert_eq!(r(s), Ok(Yaml::Other("float", t)), "{s:?}");
    }
    for (s, t) in [("1.5e+3", true), ("1.0e-400", false), ("1:30.5", true), ("0:00.", false), ("1.", true)] {
        assert_eq!(r(s), Ok(Yaml::Other("float", t)), "{s:?}");
    }
    for s in
        ["1e3", "1.0e3", ".", "._", "yes please", "nO", "0x", "2024-1-5", "+.nan", "v1.0", "1_0.0.0", "0:00", "-.0_0"]
    {
        assert_eq!(r(s), Ok(Yaml::Str(s.into())), "{s:?}");
    }
    for s in
        ["2024-01-15", "2024-02-29", "2024-1-5 1:02:03", "2024-01-15T10:20:30.123456789Z", "2000-12-31 23:59:59 -23:59"]
    {
        assert_eq!(r(s), Ok(Yaml::Other("datetime", true)), "{s:?}");
    }
    for s in
        ["2023-02-29", "2024-13-01", "0000-01-01", "2024-01-15 24:00:00", "2024-01-15 10:20:60", "2024-01-15 1:2:3"]
    {
        let got = r(s);
        assert!(got.is_err() || got == Ok(Yaml::Str(s.into())), "{s:?}: {got:?}");
    }
    for s in [
        "2023-02-29",
        "2024-13-01",
        "0000-01-01",
        "2024-01-15 24:00:00",
        "2024-01-15 10:20:60",
        "2024-01-01 1:00:00 +24",
    ] {
        assert!(r(s).is_err(), "{s:?}");
    }
    for s in ["0b_", "0x__", "=", "<<"] {
        assert!(r(s).is_err(), "{s:?}");
    }
}

#[test]
fn front_matter_follows_gguf_py() {
    assert_eq!(front_matter("# t\n---\n"), None);
    assert_eq!(front_matter(""), None);
    assert_eq!(front_matter("\u{feff}---\na: 1\n---\n"), None);
    assert_eq!(front_matter("---\n---\n").as_deref(), Some("\n"));
    assert_eq!(front_matter("---\r\na:\r\n- no\r\n\t- b\n---\nx").as_deref(), Some("a:\n- \"no\"\n  - b\n"));
    assert_eq!(front_matter("---\nx: a- no\n- no \n").as_deref(), Some("x: a- \"no\"\n- no \n"));
    assert_eq!(front_matter("--- \na: 1\n"), None);
}

#[test]
fn splitlines_follows_python() {
    assert_eq!(python_splitlines("a\r\nb\rc\u{2028}d\n"), vec!["a", "b", "c", "d"]);
    assert_eq!(python_splitlines(""), Vec::<&str>::new());
    assert_eq!(python_splitlines("\n\n"), vec!["", ""]);
}

#[test]
fn yaml_values_follow_safe_load() {
    let map = |y: &str| match parse_yaml(y).unwrap() {
        Yaml::Map(e) => e,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        map("a: 1\nb: x\na: y\n"),
        vec![(Some("a".into()), Yaml::Str("y".into())), (Some("b".into()), Yaml::Str("x".into()))]
    );
    assert_eq!(map("yes: 1\n'yes': 2\n")[1], (Some("yes".into()), Yaml::Other("int", true)));
    assert_eq!(map("a: &x [b]\nc: *x\n")[1].1, Yaml::Seq(vec![Yaml::Str("b".into())]));
    assert_eq!(map("a: !!str 0x0\n")[0].1, Yaml::Str("0x0".into()));
    assert_eq!(parse_yaml("\n# only a comment\n"), Ok(Yaml::Null));
    assert_eq!(parse_card("- a\n"), Ok(Card::default()));
    assert_eq!(parse_card("plain\n"), Ok(Card::default()));
    for bad in [
        "a: !foo x\n",
        "a: !!binary aGk=\n",
        "? [a]\n: b\n",
        "a: 1\n--- \nb: 2\n",
        "a: [b\n",
        "a: *nope\n",
        "<<: {a: b}\n",
    ] {
        assert!(parse_card(bad).is_err(), "{bad:?}");
    }
    for bad in ["a: \u{1}\n", "a: b\u{7f}\n", "a: \u{fffe}\n", "a: \u{feff}b\n"] {
        assert!(parse_card(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn hostile_cards_are_refused_without_panics() {
    let deep_flow = format!("a: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
    assert!(parse_card(&deep_flow).is_err());
    let mut deep_block = String::new();
    for i in 0..200 {
        deep_block += &format!("{}k{i}:\n", " ".repeat(i));
    }
    assert!(parse_card(&deep_block).is_err());
    let ok_nesting = format!("a: {}{}\n", "[".repeat(MAX_DEPTH - 1), "]".repeat(MAX_DEPTH - 1));
    assert!(parse_card(&ok_nesting).is_ok());
    let huge = format!("a: \"{}\"\n", "x".repeat(MAX_FRONT_MATTER));
    assert!(parse_card(&huge).unwrap_err().contains("bytes"));
    // A billion laughs: each level doubles the nodes the aliases expand to.
    let mut laughs = String::from("l0: &l0 [x, x]\n");
    for i in 1..40 {
        laughs += &format!("l{i}: &l{i} [*l{p}, *l{p}]\n", p = i - 1);
    }
    assert!(parse_card(&laughs).unwrap_err().contains("nodes"));
    for junk in ["a: [}\n", ": : :\n", "- - - -\n", "{{{\n", "\"\n", "a: |\n x\n  y\n", "&a *a\n", "!\n", "%YAML 9\n"] {
        let _ = parse_card(junk);
    }

    let root = tempfile::tempdir().unwrap();
    let readme = |bytes: &[u8]| {
        let dir = root.path().join("m");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("README.md"), bytes).unwrap();
        load(&dir)
    };
    assert!(readme(b"---\nlicense: \xff\n---\n").is_err());
    assert!(readme(b"# body\n\xff").is_err());
    let mut big = b"---\n".to_vec();
    big.resize(MAX_FRONT_MATTER + 100, b'#');
    assert!(readme(&big).is_err());
    let mut body = b"---\nlicense: mit\n---\n".to_vec();
    body.resize(4 << 20, b'x');
    assert!(readme(&body).is_ok());
    assert_eq!(load(&root.path().join("absent")).unwrap(), Card::default());
}
