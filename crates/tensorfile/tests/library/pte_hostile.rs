//! Hostile ExecuTorch programs: every check the runtime makes when it loads a program or a
//! method is one of ours, each asserted here with the exact rule. The programs are a real
//! ExecuTorch fixture with one thing broken: its decoded flatbuffer edited and re-encoded,
//! or its bytes patched.

use std::path::PathBuf;

use tensorfile::formats::executorch::program_schema;
use tensorfile::formats::executorch::pte::PteReader;
use tensorfile::internals::flatbuf::{self, Table, Value};
use tensorfile::source::Bytes;
use tensorfile::{Format, Rule, TensorFile};

fn fixture() -> Vec<u8> {
    let dir = std::env::var("TENSORFILE_PTE_FIXTURE").map(PathBuf::from).unwrap_or_else(|_| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/executorch/constants.pte")
    });
    std::fs::read(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

fn open(bytes: Vec<u8>) -> tensorfile::Result<TensorFile> {
    tensorfile::OpenOptions::new().format(Format::Pte).open_bytes(Bytes::from_vec(bytes))
}

fn open_rule(bytes: Vec<u8>) -> Rule {
    match open(bytes) {
        Ok(_) => panic!("hostile program was accepted"),
        Err(e) => e.rule().unwrap_or_else(|| panic!("no rule in {e}")),
    }
}

/// The fixture with its program edited by `edit`, re-encoded, its segments kept in place.
fn edited(edit: impl FnOnce(&mut Table)) -> Vec<u8> {
    let original = fixture();
    let file =
        tensorfile::OpenOptions::new().format(Format::Pte).open_bytes(Bytes::from_vec(original.clone())).unwrap();
    let program = file.reader_as::<PteReader>().unwrap().program();
    let mut root = program.root.clone();
    edit(&mut root);
    let layout = program.layout;
    let mut bytes = flatbuf::encode(program_schema(), &root, 32).unwrap();
    let program_size = bytes.len() as u64;
    let base = program_size.next_multiple_of(128);
    let header = tensorfile::formats::executorch::pte::HeaderLayout::extended_bytes(
        program_size,
        base,
        layout.segment_data_size,
    );
    bytes[8..40].copy_from_slice(&header);
    bytes.resize(base as usize, 0);
    let start = layout.segment_base_offset as usize;
    bytes.extend_from_slice(&original[start..start + layout.segment_data_size as usize]);
    bytes
}

/// The rules `verify` reports for a program.
fn verify_rules(bytes: Vec<u8>) -> Vec<Rule> {
    let f = open(bytes).unwrap_or_else(|e| panic!("should open: {e}"));
    f.verify().iter().map(|e| e.rule().unwrap_or_else(|| panic!("no rule: {e}"))).collect()
}

fn has(rules: Vec<Rule>, rule: Rule) {
    assert!(rules.contains(&rule), "expected {rule:?} among {rules:?}");
}

fn plan(root: &mut Table) -> &mut Table {
    match &mut root.vector_mut("execution_plan").unwrap()[0] {
        Value::Table(t) => t,
        _ => unreachable!(),
    }
}

/// The `Tensor` table of value `i` of the first method.
fn tensor(root: &mut Table, i: usize) -> &mut Table {
    match &mut plan(root).vector_mut("values").unwrap()[i] {
        Value::Table(ev) => match ev.get_mut("val") {
            Some(Value::Union(u)) => u.value.as_deref_mut().unwrap(),
            _ => panic!("value {i} has no data"),
        },
        _ => unreachable!(),
    }
}

fn first_instruction(root: &mut Table) -> &mut Table {
    let chain = match &mut plan(root).vector_mut("chains").unwrap()[0] {
        Value::Table(t) => t,
        _ => unreachable!(),
    };
    match &mut chain.vector_mut("instructions").unwrap()[0] {
        Value::Table(ins) => match ins.get_mut("instr_args") {
            Some(Value::Union(u)) => u.value.as_deref_mut().unwrap(),
            _ => unreachable!(),
        },
        _ => unreachable!(),
    }
}

#[test]
fn the_fixture_itself_is_sound() {
    let f = open(fixture()).unwrap();
    assert!(f.verify().is_empty(), "{:?}", f.verify());
    assert!(verify_rules(edited(|_| {})).is_empty(), "re-encoding alone breaks nothing");
}

#[test]
fn truncation_at_every_length_is_an_error_or_a_shorter_program() {
    let good = fixture();
    for len in 0..good.len() {
        // Cut inside the headers, the program or the segments: never a panic.
        let _ = open(good[..len].to_vec()).map(|f| f.verify());
    }
    assert_eq!(open_rule(good[..6].to_vec()), Rule::Truncated);
    assert_eq!(open_rule(good[..good.len() - 1].to_vec()), Rule::OutOfBounds, "segment data cut");
}

#[test]
fn identifiers_and_headers() {
    let mut b = fixture();
    b[4..8].copy_from_slice(b"XX12");
    assert_eq!(open_rule(b), Rule::BadMagic);
    let mut b = fixture();
    b[4..8].copy_from_slice(b"ET99");
    assert!(matches!(open(b).err().unwrap().kind(), tensorfile::ErrorKind::Unsupported(_)));
    let mut b = fixture();
    b[12..16].copy_from_slice(&20u32.to_le_bytes());
    assert_eq!(open_rule(b), Rule::BadField, "extended header shorter than 24");
    let mut b = fixture();
    let len = b.len() as u64;
    b[16..24].copy_from_slice(&(len + 1).to_le_bytes());
    assert_eq!(open_rule(b), Rule::OutOfBounds, "program size past the file");
    let mut b = fixture();
    b[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(open_rule(b), Rule::OutOfBounds, "segment base past the file (overflowing)");
    let mut b = fixture();
    b[32..40].copy_from_slice(&(len).to_le_bytes());
    assert_eq!(open_rule(b), Rule::OutOfBounds, "segment data past the file");
}

#[test]
fn a_24_byte_extended_header_is_read() {
    // Files before ExecuTorch 1.0: no segment_data_size; segments run to the end of the file.
    let mut b = fixture();
    b[12..16].copy_from_slice(&24u32.to_le_bytes());
    let f = open(b).unwrap();
    assert!(f.verify().is_empty(), "{:?}", f.verify());
    assert_eq!(f.entries().len(), open(fixture()).unwrap().entries().len());
}

#[test]
fn a_longer_extended_header_is_read_by_its_length() {
    // Fields may be added after the four known ones: a reader must use the length.
    let b = fixture();
    let program_size = u64::from_le_bytes(b[16..24].try_into().unwrap());
    let root = u32::from_le_bytes(b[0..4].try_into().unwrap()) as u64;
    // The fixture's header (32 bytes) sits in a 32-byte gap before the root table; claim 40
    // when the root lies beyond byte 48.
    if root >= 48 && program_size >= 48 {
        let mut longer = b.clone();
        longer[12..16].copy_from_slice(&40u32.to_le_bytes());
        let f = open(longer).unwrap();
        assert_eq!(f.entries().len(), open(b).unwrap().entries().len());
    }
    let mut too_long = fixture();
    too_long[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(open_rule(too_long), Rule::Truncated, "a header longer than the file");
}

#[test]
fn broken_flatbuffer_offsets() {
    let mut b = fixture();
    let past = b.len() as u32 + 8;
    b[0..4].copy_from_slice(&past.to_le_bytes());
    assert_eq!(open_rule(b), Rule::OutOfBounds, "root offset past the end");
    let mut b = fixture();
    b[0..4].copy_from_slice(&41u32.to_le_bytes());
    assert_eq!(open_rule(b), Rule::Misaligned, "root table not aligned");
    let mut b = fixture();
    let root = u32::from_le_bytes(b[0..4].try_into().unwrap()) as usize;
    b[root..root + 4].copy_from_slice(&(-100_000i32).to_le_bytes());
    assert_eq!(open_rule(b), Rule::OutOfBounds, "vtable past the end");
}

#[test]
fn program_version_must_be_zero() {
    assert_eq!(open_rule(edited(|r| r.set("version", Some(Value::UInt(1))))), Rule::BadField);
}

#[test]
fn segments_past_the_segment_data() {
    let b = edited(|r| {
        if let Some(Value::Table(s)) = r.vector_mut("segments").unwrap().first_mut() {
            s.set("offset", Some(Value::UInt(1 << 40)));
        }
    });
    assert_eq!(open_rule(b), Rule::OutOfBounds);
}

#[test]
fn method_fields_the_runtime_requires() {
    for field in ["non_const_buffer_sizes", "inputs", "outputs"] {
        has(verify_rules(edited(|r| plan(r).set(field, None))), Rule::MissingField);
    }
    has(
        verify_rules(edited(|r| {
            plan(r).set("non_const_buffer_sizes", Some(Value::Vector(vec![Value::Int(0), Value::Int(-5)])))
        })),
        Rule::BadField,
    );
}

/// Planned buffer sizes whose total overflows: `info` says so instead of panicking (found by
/// fuzz-smoke in CI: the summary summed them unchecked).
#[test]
fn planned_memory_that_overflows() {
    let huge = Value::Vector(vec![Value::Int(0), Value::Int(i64::MAX), Value::Int(i64::MAX)]);
    let f = open(edited(|r| plan(r).set("non_const_buffer_sizes", Some(huge)))).unwrap();
    let structure = f.summary().structure.expect("a program is described");
    assert_eq!(structure.json["methods"][0]["planned_memory_bytes"], serde_json::Value::Null);
    assert!(structure.text.contains("the sizes overflow"), "{}", structure.text);
    let fine = Value::Vector(vec![Value::Int(0), Value::Int(100), Value::Int(28)]);
    let f = open(edited(|r| plan(r).set("non_const_buffer_sizes", Some(fine)))).unwrap();
    assert_eq!(f.summary().structure.unwrap().json["methods"][0]["planned_memory_bytes"], 128);
}

#[test]
fn value_indices_out_of_range() {
    has(
        verify_rules(edited(|r| plan(r).set("inputs", Some(Value::Vector(vec![Value::Int(9999)]))))),
        Rule::OutOfBounds,
    );
    has(verify_rules(edited(|r| plan(r).set("outputs", Some(Value::Vector(vec![Value::Int(-1)]))))), Rule::OutOfBounds);
    has(
        verify_rules(edited(|r| first_instruction(r).set("args", Some(Value::Vector(vec![Value::Int(1 << 30)]))))),
        Rule::OutOfBounds,
    );
}

#[test]
fn operator_and_delegate_indices_out_of_range() {
    has(verify_rules(edited(|r| first_instruction(r).set("op_index", Some(Value::Int(1000))))), Rule::OutOfBounds);
}

#[test]
fn tensor_rules() {
    // The first values of the fixture are constants (see its record).
    has(verify_rules(edited(|r| tensor(r, 0).set("sizes", Some(Value::Vector(vec![Value::Int(-1)]))))), Rule::BadField);
    has(
        verify_rules(edited(|r| tensor(r, 0).set("sizes", Some(Value::Vector(vec![Value::Int(1); 17]))))),
        Rule::BadField,
    );
    has(
        verify_rules(edited(|r| tensor(r, 0).set("dim_order", Some(Value::Bytes(vec![0, 0, 1, 2].into()))))),
        Rule::BadField,
    );
    has(verify_rules(edited(|r| tensor(r, 0).set("storage_offset", Some(Value::Int(4))))), Rule::BadField);
    has(verify_rules(edited(|r| tensor(r, 0).set("scalar_type", Some(Value::Int(99))))), Rule::UnknownDType);
    let huge: Vec<Value> = vec![Value::Int(i32::MAX as i64); 4];
    has(verify_rules(edited(|r| tensor(r, 0).set("sizes", Some(Value::Vector(huge))))), Rule::ShapeOverflow);
}

#[test]
fn constant_buffers_out_of_range() {
    has(verify_rules(edited(|r| tensor(r, 0).set("data_buffer_idx", Some(Value::UInt(500))))), Rule::OutOfBounds);
    // A constant whose bytes run past its segment.
    has(
        verify_rules(edited(|r| {
            let t = tensor(r, 0);
            t.set("sizes", Some(Value::Vector(vec![Value::Int(1 << 20)])));
            t.set("dim_order", Some(Value::Bytes(vec![0].into())));
        })),
        Rule::OutOfBounds,
    );
    let b = edited(|r| {
        if let Some(Value::Table(cs)) = r.get_mut("constant_segment") {
            cs.set("segment_index", Some(Value::UInt(7)));
        }
    });
    has(verify_rules(b), Rule::OutOfBounds);
}

#[test]
fn constants_in_both_places() {
    let b = edited(|r| {
        let mut buffer = tensorfile::internals::flatbuf::new_table(program_schema(), "Buffer");
        buffer.set("storage", Some(Value::Bytes(vec![0u8; 16].into())));
        r.set("constant_buffer", Some(Value::Vector(vec![Value::Table(buffer)])));
    });
    has(verify_rules(b), Rule::BadField);
}

#[test]
fn planned_memory_outside_its_arena() {
    // Find a planned tensor (with allocation_info) and move it past its arena.
    let b = edited(|r| {
        let n = plan(r).vector("values").unwrap().len();
        for i in 0..n {
            let Value::Table(ev) = &mut plan(r).vector_mut("values").unwrap()[i] else { continue };
            let Some(Value::Union(u)) = ev.get_mut("val") else { continue };
            let Some(t) = u.value.as_deref_mut() else { continue };
            if let Some(alloc) = t.table_mut("allocation_info") {
                alloc.set("memory_offset_high", Some(Value::UInt(7)));
                return;
            }
        }
        panic!("no planned tensor in the fixture");
    });
    has(verify_rules(b), Rule::OutOfBounds);
}

#[test]
fn unknown_union_tags_are_refused() {
    let b = edited(|r| {
        if let Value::Table(ev) = &mut plan(r).vector_mut("values").unwrap()[0] {
            if let Some(Value::Union(u)) = ev.get_mut("val") {
                u.tag = 42;
            }
        }
    });
    assert_eq!(open_rule(b), Rule::BadField);
}

fn new(name: &str, fields: Vec<(&str, Value)>) -> Table {
    let mut t = tensorfile::internals::flatbuf::new_table(program_schema(), name);
    for (k, v) in fields {
        t.set(k, Some(v));
    }
    t
}

/// Replace the first instruction's arguments by a `variant` table.
fn set_first_instruction(root: &mut Table, variant: &str, fields: Vec<(&str, Value)>) {
    let chain = match &mut plan(root).vector_mut("chains").unwrap()[0] {
        Value::Table(t) => t,
        _ => unreachable!(),
    };
    let Value::Table(ins) = &mut chain.vector_mut("instructions").unwrap()[0] else { unreachable!() };
    let Some(Value::Union(u)) = ins.get_mut("instr_args") else { unreachable!() };
    u.tag = 1 + u.def.variants.iter().position(|(n, _)| n == variant).unwrap() as u8;
    u.value = Some(Box::new(new(variant, fields)));
}

#[test]
fn every_instruction_kind_checks_its_indices() {
    let big = || Value::Int(1 << 20);
    let cases: Vec<(&str, Vec<(&str, Value)>)> = vec![
        ("DelegateCall", vec![("delegate_index", Value::Int(3)), ("args", Value::Vector(vec![]))]),
        ("MoveCall", vec![("move_from", big()), ("move_to", Value::Int(0))]),
        ("MoveCall", vec![("move_from", Value::Int(0)), ("move_to", Value::Int(-2))]),
        ("JumpFalseCall", vec![("cond_value_index", big()), ("destination_instruction", Value::Int(0))]),
        ("JumpFalseCall", vec![("cond_value_index", Value::Int(0)), ("destination_instruction", big())]),
        ("FreeCall", vec![("value_index", big())]),
    ];
    for (variant, fields) in cases {
        has(verify_rules(edited(|r| set_first_instruction(r, variant, fields))), Rule::OutOfBounds);
    }
}

#[test]
fn list_values_checks_their_items() {
    for list in ["TensorList", "OptionalTensorList"] {
        let b = edited(|r| {
            let u = tensorfile::internals::flatbuf::Union {
                def: &program_schema().unions[0],
                tag: 1 + program_schema().unions[0].variants.iter().position(|(n, _)| n == list).unwrap() as u8,
                value: Some(Box::new(new(
                    list,
                    vec![("items", Value::Vector(vec![Value::Int(-1), Value::Int(77_777)]))],
                ))),
            };
            let ev = new("EValue", vec![("val", Value::Union(u))]);
            plan(r).vector_mut("values").unwrap().push(Value::Table(ev));
        });
        has(verify_rules(b), Rule::OutOfBounds);
    }
}

#[test]
fn delegate_data_references_out_of_range() {
    for (location, index) in [(0, 5u64), (1, 99)] {
        let b = edited(|r| {
            let processed = new(
                "BackendDelegateDataReference",
                vec![("location", Value::Int(location)), ("index", Value::UInt(index))],
            );
            let d =
                new("BackendDelegate", vec![("id", Value::Str("Fake".into())), ("processed", Value::Table(processed))]);
            plan(r).set("delegates", Some(Value::Vector(vec![Value::Table(d)])));
        });
        has(verify_rules(b), Rule::OutOfBounds);
    }
    let b =
        edited(|r| plan(r).set("delegates", Some(Value::Vector(vec![Value::Table(new("BackendDelegate", vec![]))]))));
    has(verify_rules(b), Rule::MissingField);
}

#[test]
fn named_data_and_mutable_segments_out_of_range() {
    let b = edited(|r| {
        let nd = new("NamedData", vec![("key", Value::Str("w".into())), ("segment_index", Value::UInt(99))]);
        r.set("named_data", Some(Value::Vector(vec![Value::Table(nd)])));
    });
    let f = open(b.clone()).unwrap();
    assert_eq!(f.unreadable()[0].error().rule(), Some(Rule::OutOfBounds));
    has(verify_rules(b), Rule::OutOfBounds);
    let b = edited(|r| {
        let list = new(
            "SubsegmentOffsets",
            vec![("segment_index", Value::UInt(99)), ("offsets", Value::Vector(vec![Value::UInt(0)]))],
        );
        r.set("mutable_data_segments", Some(Value::Vector(vec![Value::Table(list)])));
    });
    has(verify_rules(b), Rule::OutOfBounds);
    let dup = edited(|r| {
        let nd =
            || Value::Table(new("NamedData", vec![("key", Value::Str("w".into())), ("segment_index", Value::UInt(0))]));
        r.set("named_data", Some(Value::Vector(vec![nd(), nd()])));
    });
    assert_eq!(open_rule(dup), Rule::DuplicateName);
}

#[test]
fn memory_ids_out_of_range() {
    let b = edited(|r| {
        let n = plan(r).vector("values").unwrap().len();
        for i in 0..n {
            let Value::Table(ev) = &mut plan(r).vector_mut("values").unwrap()[i] else { continue };
            let Some(Value::Union(u)) = ev.get_mut("val") else { continue };
            if let Some(alloc) = u.value.as_deref_mut().and_then(|t| t.table_mut("allocation_info")) {
                alloc.set("memory_id", Some(Value::UInt(40)));
                return;
            }
        }
    });
    has(verify_rules(b), Rule::OutOfBounds);
}
