//! ExecuTorch programs (`.pte`): a real program (a fixture made by ExecuTorch) with one thing
//! broken: its bytes patched, or its decoded flatbuffer edited and re-encoded (with
//! tensorfile's flatbuffer encoder) in front of its original segments.

use tensorfile::formats::executorch::program_schema;
use tensorfile::formats::executorch::pte::{HeaderLayout, PteReader};
use tensorfile::internals::flatbuf::{self, Table, Union, Value};
use tensorfile::source::Bytes;
use tensorfile::{Format, Rule};

use super::Fixtures;
use crate::build::{find, put_u32, put_u64, u32_at};
use crate::case::{Family as F, Folder};

/// `base` with its program edited by `edit`, re-encoded, its segments kept.
pub(super) fn edited(base: &[u8], edit: impl FnOnce(&mut Table)) -> Result<Vec<u8>, String> {
    let file = tensorfile::OpenOptions::new()
        .format(Format::Pte)
        .open_bytes(Bytes::from_vec(base.to_vec()))
        .map_err(|e| e.to_string())?;
    let program = file.reader_as::<PteReader>().ok_or("not a program")?.program();
    let mut root = program.root.clone();
    edit(&mut root);
    let layout = program.layout;
    let mut bytes = flatbuf::encode(program_schema(), &root, 32).map_err(|e| e.to_string())?;
    let program_size = bytes.len() as u64;
    let segment_base = program_size.next_multiple_of(128);
    bytes[8..40].copy_from_slice(&HeaderLayout::extended_bytes(program_size, segment_base, layout.segment_data_size));
    bytes.resize(segment_base as usize, 0);
    let start = layout.segment_base_offset as usize;
    bytes.extend_from_slice(&base[start..start + layout.segment_data_size as usize]);
    Ok(bytes)
}

pub(super) fn table(v: &mut Value) -> &mut Table {
    match v {
        Value::Table(t) => t,
        _ => panic!("not a table"),
    }
}

pub(super) fn plan(root: &mut Table) -> &mut Table {
    table(&mut root.vector_mut("execution_plan").expect("execution_plan")[0])
}

/// The `Tensor` of value `i` of the first method.
fn tensor(root: &mut Table, i: usize) -> &mut Table {
    let ev = table(&mut plan(root).vector_mut("values").expect("values")[i]);
    match ev.get_mut("val") {
        Some(Value::Union(u)) => u.value.as_deref_mut().expect("tensor"),
        _ => panic!("value {i} has no data"),
    }
}

/// The `allocation_info` of the first planned tensor value.
fn planned(root: &mut Table) -> &mut Table {
    let values = plan(root).vector("values").expect("values");
    let i = values
        .iter()
        .position(|v| match v {
            Value::Table(ev) => matches!(ev.get("val"), Some(Value::Union(u))
                if u.value.as_deref().is_some_and(|t| t.table("allocation_info").ok().flatten().is_some())),
            _ => false,
        })
        .expect("a planned tensor");
    tensor(root, i).table_mut("allocation_info").expect("allocation_info")
}

pub(super) fn new(name: &str, fields: Vec<(&str, Value)>) -> Table {
    let mut t = flatbuf::new_table(program_schema(), name);
    for (k, v) in fields {
        t.set(k, Some(v));
    }
    t
}

/// The first instruction's union.
fn first_instruction(root: &mut Table) -> &mut Union {
    let chain = table(&mut plan(root).vector_mut("chains").expect("chains")[0]);
    let ins = table(&mut chain.vector_mut("instructions").expect("instructions")[0]);
    match ins.get_mut("instr_args") {
        Some(Value::Union(u)) => u,
        _ => panic!("no instruction arguments"),
    }
}

/// Replace the first instruction by a `variant` with `fields`.
fn set_first_instruction(root: &mut Table, variant: &str, fields: Vec<(&str, Value)>) {
    let u = first_instruction(root);
    u.tag = 1 + u.def.variants.iter().position(|(n, _)| *n == variant).expect("variant") as u8;
    u.value = Some(Box::new(new(variant, fields)));
}

fn list_value(root: &mut Table, list: &str, items: Vec<Value>) {
    let def = &program_schema().unions[0];
    let tag = 1 + def.variants.iter().position(|(n, _)| *n == list).expect("list variant") as u8;
    let u = Union { def, tag, value: Some(Box::new(new(list, vec![("items", Value::Vector(items))]))) };
    plan(root).vector_mut("values").expect("values").push(Value::Table(new("EValue", vec![("val", Value::Union(u))])));
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("pte", Format::Pte, "pte");
    let base = fx.read("executorch/constants.pte")?;
    for (stem, path, what) in [
        ("constants", "executorch/constants.pte", "constants in the constant segment (fixture made by ExecuTorch)"),
        ("two-methods", "executorch/two_methods.pte", "two methods (fixture made by ExecuTorch)"),
        (
            "legacy-constant-buffer",
            "executorch/legacy_constant_buffer.pte",
            "constants in the deprecated inline constant_buffer (fixture)",
        ),
        ("mutable", "executorch/mutable.pte", "mutable buffers with initial state (fixture)"),
        (
            "xnnpack",
            "executorch/xnnpack.pte",
            "an XNNPACK-delegated program: named data and a delegate segment (fixture)",
        ),
    ] {
        f.valid(stem, F::Valid, what, fx.read(path)?);
    }
    f.valid("re-encoded", F::Valid, "the constants fixture decoded and re-encoded unchanged", edited(&base, |_| {})?);
    let mut b = base.clone();
    put_u32(&mut b, 12, 24);
    f.valid(
        "extended-header-24",
        F::Valid,
        "an extended header of 24 bytes (before ExecuTorch 1.0): segments run to the end",
        b,
    );

    headers(&mut f, &base);
    flatbuffer(&mut f, &base)?;
    indices(&mut f, &base)?;
    tensors(&mut f, &base)?;
    Ok(f)
}

fn headers(f: &mut Folder, base: &[u8]) {
    let len = base.len() as u64;
    let tr = Rule::Truncated;
    f.open("truncated-in-identifier", F::Truncation, tr, "6 bytes: cut inside ET12", base[..6].to_vec());
    f.open(
        "truncated-in-extended-length",
        F::Truncation,
        tr,
        "cut inside the extended header's length",
        base[..14].to_vec(),
    );
    f.open(
        "truncated-in-extended-header",
        F::Truncation,
        tr,
        "cut inside the extended header's program size",
        base[..20].to_vec(),
    );
    f.open(
        "truncated-segment-data",
        F::Truncation,
        Rule::OutOfBounds,
        "the last byte of the segment data cut",
        base[..base.len() - 1].to_vec(),
    );
    let mut b = base.to_vec();
    b[4..8].copy_from_slice(b"XX12");
    f.open("bad-identifier", F::BadMagic, Rule::BadMagic, "identifier XX12", b);
    let mut b = base.to_vec();
    put_u32(&mut b, 12, u32::MAX);
    f.open("extended-length-past-end", F::PastEnd, tr, "an extended header of 2^32-1 bytes", b);
    let mut b = base.to_vec();
    put_u32(&mut b, 12, 20);
    f.open("extended-length-short", F::BadField, Rule::BadField, "an extended header of 20 bytes (at least 24)", b);
    let oob = Rule::OutOfBounds;
    let mut b = base.to_vec();
    put_u64(&mut b, 16, len + 1);
    f.open("program-size-past-end", F::PastEnd, oob, "program size one byte past the file", b);
    let mut b = base.to_vec();
    put_u64(&mut b, 16, 8);
    f.open("program-size-inside-header", F::PastEnd, oob, "program size 8: less than its own headers", b);
    let mut b = base.to_vec();
    put_u64(&mut b, 24, u64::MAX);
    f.open("segment-base-overflows", F::Overflow, oob, "segment base 2^64-1: base + size overflows", b);
    let mut b = base.to_vec();
    put_u64(&mut b, 32, len);
    f.open("segment-data-past-end", F::PastEnd, oob, "segment data as long as the whole file", b);
    let mut b = base.to_vec();
    put_u64(&mut b, 24, 64);
    f.open("segments-over-program", F::Overlap, oob, "segment base 64, inside the program", b);
    let mut b = base.to_vec();
    put_u64(&mut b, 24, 0);
    f.open("segment-data-without-base", F::BadField, Rule::BadField, "segment data size without a segment base", b);
}

fn flatbuffer(f: &mut Folder, base: &[u8]) -> Result<(), String> {
    let oob = Rule::OutOfBounds;
    let mf = F::MalformedFlatbuffer;
    let mut b = base.to_vec();
    put_u32(&mut b, 0, base.len() as u32 + 8);
    f.open("root-offset-past-end", mf, oob, "root table offset past the end", b);
    let mut b = base.to_vec();
    put_u32(&mut b, 0, 41);
    f.open("root-misaligned", F::Misaligned, Rule::Misaligned, "root table at offset 41", b);
    let root = u32_at(base, 0) as usize;
    let mut b = base.to_vec();
    b[root..root + 4].copy_from_slice(&(-100_000i32).to_le_bytes());
    f.open("vtable-past-end", mf, oob, "the root's vtable 100000 bytes after it", b);
    let mut b = base.to_vec();
    b[root..root + 4].copy_from_slice(&(root as i32 + 64).to_le_bytes());
    f.open("vtable-before-buffer", mf, oob, "the root's vtable before byte 0", b);
    let name = find(base, b"\x07\x00\x00\x00forward\x00").ok_or("no method name in the fixture")?;
    let mut b = base.to_vec();
    b[name + 4] = 0xff;
    f.open("string-bad-utf8", F::BadUtf8, Rule::BadUtf8, "the method name with the byte 0xff", b);
    let mut b = base.to_vec();
    b[name + 11] = b'x';
    f.open("string-not-terminated", mf, Rule::BadField, "the method name without its NUL", b);
    let mut b = base.to_vec();
    put_u32(&mut b, name, 0x7fff_fff0);
    f.open("string-length-past-end", F::PastEnd, oob, "the method name's length 2^31-16", b);

    let tag = edited(base, |r| {
        let ev = table(&mut plan(r).vector_mut("values").expect("values")[0]);
        if let Some(Value::Union(u)) = ev.get_mut("val") {
            u.tag = 42;
        }
    })?;
    f.open("unknown-union-tag", mf, Rule::BadField, "a value whose union type is 42", tag);
    f.open(
        "version-1",
        F::BadField,
        Rule::BadField,
        "program version 1 (the runtime needs 0)",
        edited(base, |r| r.set("version", Some(Value::UInt(1))))?,
    );
    let far = edited(base, |r| {
        if let Some(Value::Table(s)) = r.vector_mut("segments").expect("segments").first_mut() {
            s.set("offset", Some(Value::UInt(1 << 40)));
        }
    })?;
    f.open("segment-past-segment-data", F::PastEnd, oob, "segment 0 at offset 2^40", far);
    let wrap = edited(base, |r| {
        if let Some(Value::Table(s)) = r.vector_mut("segments").expect("segments").first_mut() {
            s.set("offset", Some(Value::UInt(u64::MAX - 2)));
            s.set("size", Some(Value::UInt(16)));
        }
    })?;
    f.open("segment-offset-overflows", F::Overflow, oob, "segment 0 at 2^64-3 of 16 bytes", wrap);
    let dup = edited(base, |r| {
        let nd =
            || Value::Table(new("NamedData", vec![("key", Value::Str("w".into())), ("segment_index", Value::UInt(0))]));
        r.set("named_data", Some(Value::Vector(vec![nd(), nd()])));
    })?;
    f.open("duplicate-named-data", F::DuplicateName, Rule::DuplicateName, "two named data entries keyed w", dup);
    Ok(())
}

/// Indices into other tables, each found by `verify` (the runtime's load-time checks).
fn indices(f: &mut Folder, base: &[u8]) -> Result<(), String> {
    let oob = Rule::OutOfBounds;
    let ix = F::OutOfRangeIndex;
    let mut v = |stem: &str, what: &str, edit: &dyn Fn(&mut Table)| -> Result<(), String> {
        f.verify(stem, ix, oob, what, edited(base, edit)?);
        Ok(())
    };
    v("operator-index", "a kernel call of operator 1000", &|r| {
        first_instruction(r).value.as_deref_mut().expect("kernel call").set("op_index", Some(Value::Int(1000)))
    })?;
    v("kernel-argument-index", "a kernel argument naming value 2^30", &|r| {
        first_instruction(r)
            .value
            .as_deref_mut()
            .expect("kernel call")
            .set("args", Some(Value::Vector(vec![Value::Int(1 << 30)])))
    })?;
    v("method-input-index", "a method input naming value 9999", &|r| {
        plan(r).set("inputs", Some(Value::Vector(vec![Value::Int(9999)])))
    })?;
    v("method-output-negative", "a method output naming value -1", &|r| {
        plan(r).set("outputs", Some(Value::Vector(vec![Value::Int(-1)])))
    })?;
    let big = || Value::Int(1 << 20);
    v("delegate-index", "a delegate call of delegate 3 (the method has none)", &|r| {
        set_first_instruction(
            r,
            "DelegateCall",
            vec![("delegate_index", Value::Int(3)), ("args", Value::Vector(vec![]))],
        )
    })?;
    v("move-from-index", "a move from value 2^20", &|r| {
        set_first_instruction(r, "MoveCall", vec![("move_from", big()), ("move_to", Value::Int(0))])
    })?;
    v("move-to-negative", "a move to value -2", &|r| {
        set_first_instruction(r, "MoveCall", vec![("move_from", Value::Int(0)), ("move_to", Value::Int(-2))])
    })?;
    v("jump-condition-index", "a jump on value 2^20", &|r| {
        set_first_instruction(
            r,
            "JumpFalseCall",
            vec![("cond_value_index", big()), ("destination_instruction", Value::Int(0))],
        )
    })?;
    v("jump-destination-index", "a jump to instruction 2^20", &|r| {
        set_first_instruction(
            r,
            "JumpFalseCall",
            vec![("cond_value_index", Value::Int(0)), ("destination_instruction", big())],
        )
    })?;
    v("free-value-index", "a free of value 2^20", &|r| {
        set_first_instruction(r, "FreeCall", vec![("value_index", big())])
    })?;
    v("tensor-list-item", "a tensor list naming values -1 and 77777", &|r| {
        list_value(r, "TensorList", vec![Value::Int(-1), Value::Int(77_777)])
    })?;
    v("optional-tensor-list-item", "an optional tensor list naming value 77777", &|r| {
        list_value(r, "OptionalTensorList", vec![Value::Int(-1), Value::Int(77_777)])
    })?;
    v("constant-buffer-index", "a constant in buffer 500", &|r| {
        tensor(r, 0).set("data_buffer_idx", Some(Value::UInt(500)))
    })?;
    v("constant-segment-index", "the constant segment is segment 7", &|r| {
        if let Some(Value::Table(cs)) = r.get_mut("constant_segment") {
            cs.set("segment_index", Some(Value::UInt(7)));
        }
    })?;
    v("named-data-segment-index", "named data in segment 99", &|r| {
        let nd = new("NamedData", vec![("key", Value::Str("w".into())), ("segment_index", Value::UInt(99))]);
        r.set("named_data", Some(Value::Vector(vec![Value::Table(nd)])));
    })?;
    v("mutable-segment-index", "mutable data in segment 99", &|r| {
        let list = new(
            "SubsegmentOffsets",
            vec![("segment_index", Value::UInt(99)), ("offsets", Value::Vector(vec![Value::UInt(0)]))],
        );
        r.set("mutable_data_segments", Some(Value::Vector(vec![Value::Table(list)])));
    })?;
    v("memory-id", "a planned tensor in memory arena 40", &|r| planned(r).set("memory_id", Some(Value::UInt(40))))?;
    v("inline-delegate-data-index", "a delegate's inline data 5 (there is none)", &|r| delegate(r, 0, 5))?;
    v("delegate-segment-index", "a delegate's data in segment 99", &|r| delegate(r, 1, 99))?;
    f.verify(
        "planned-past-arena",
        F::PastEnd,
        oob,
        "a planned tensor at 7 * 2^32 in its arena",
        edited(base, |r| planned(r).set("memory_offset_high", Some(Value::UInt(7))))?,
    );
    let past = edited(base, |r| {
        let t = tensor(r, 0);
        t.set("sizes", Some(Value::Vector(vec![Value::Int(1 << 20)])));
        t.set("dim_order", Some(Value::Bytes(vec![0].into())));
    })?;
    f.verify("constant-past-segment", F::PastEnd, oob, "a constant of 2^20 elements in a small segment", past);
    Ok(())
}

fn delegate(r: &mut Table, location: i64, index: u64) {
    let processed =
        new("BackendDelegateDataReference", vec![("location", Value::Int(location)), ("index", Value::UInt(index))]);
    let d = new("BackendDelegate", vec![("id", Value::Str("Fake".into())), ("processed", Value::Table(processed))]);
    plan(r).set("delegates", Some(Value::Vector(vec![Value::Table(d)])));
}

/// Tensor descriptions and method fields the runtime checks.
fn tensors(f: &mut Folder, base: &[u8]) -> Result<(), String> {
    let bf = Rule::BadField;
    let mut v = |stem: &str, family: F, rule: Rule, what: &str, edit: &dyn Fn(&mut Table)| -> Result<(), String> {
        f.verify(stem, family, rule, what, edited(base, edit)?);
        Ok(())
    };
    v("negative-size", F::BadField, bf, "a constant of sizes [-1]", &|r| {
        tensor(r, 0).set("sizes", Some(Value::Vector(vec![Value::Int(-1)])))
    })?;
    v("rank-17", F::BadField, bf, "a constant of rank 17 (the runtime allows 16)", &|r| {
        tensor(r, 0).set("sizes", Some(Value::Vector(vec![Value::Int(1); 17])))
    })?;
    v("dim-order-not-a-permutation", F::BadField, bf, "dim_order [0, 0, 1, 2]", &|r| {
        tensor(r, 0).set("dim_order", Some(Value::Bytes(vec![0, 0, 1, 2].into())))
    })?;
    v("storage-offset", F::BadField, bf, "storage_offset 4 (the runtime needs 0)", &|r| {
        tensor(r, 0).set("storage_offset", Some(Value::Int(4)))
    })?;
    v("unknown-scalar-type", F::BadField, Rule::UnknownDType, "scalar type 99", &|r| {
        tensor(r, 0).set("scalar_type", Some(Value::Int(99)))
    })?;
    v("shape-product-overflows", F::Overflow, Rule::ShapeOverflow, "sizes [2^31-1] x 4", &|r| {
        tensor(r, 0).set("sizes", Some(Value::Vector(vec![Value::Int(i64::from(i32::MAX)); 4])))
    })?;
    v("missing-inputs", F::BadField, Rule::MissingField, "a method without inputs", &|r| plan(r).set("inputs", None))?;
    v("negative-buffer-size", F::BadField, bf, "a memory arena of -5 bytes", &|r| {
        plan(r).set("non_const_buffer_sizes", Some(Value::Vector(vec![Value::Int(0), Value::Int(-5)])))
    })?;
    v("constants-in-both-places", F::BadField, bf, "constants in constant_segment and in constant_buffer", &|r| {
        let mut buffer = flatbuf::new_table(program_schema(), "Buffer");
        buffer.set("storage", Some(Value::Bytes(vec![0u8; 16].into())));
        r.set("constant_buffer", Some(Value::Vector(vec![Value::Table(buffer)])));
    })?;
    v("delegate-without-data", F::BadField, Rule::MissingField, "a delegate with no data reference", &|r| {
        plan(r).set("delegates", Some(Value::Vector(vec![Value::Table(new("BackendDelegate", vec![]))])))
    })?;
    Ok(())
}
