//! The checks the ExecuTorch runtime makes when it loads a program and its methods, beyond
//! what opening the file already checked (headers, segments, the data of every tensor).
//! Each broken rule is one error; `verify` reports them all.

use crate::error::{Error, Rule};
use crate::flatbuf::{Table, Value};
use crate::formats::executorch::TensorLayout;

use super::program::Program;

struct Checker {
    problems: Vec<Error>,
}

impl Checker {
    fn fail(&mut self, rule: Rule, detail: String) {
        self.problems.push(Error::invalid(rule, detail));
    }

    /// Record an error of a fallible read; `None` when it failed.
    fn ok<T>(&mut self, r: crate::Result<T>) -> Option<T> {
        r.map_err(|e| self.problems.push(e)).ok()
    }

    fn index(&mut self, what: &str, index: i64, len: usize) {
        if usize::try_from(index).is_err() || index as u64 >= len as u64 {
            self.fail(Rule::OutOfBounds, format!("{what} {index} out of range ({len})"));
        }
    }
}

/// Every broken load-time rule of `program`.
pub fn check(program: &Program) -> Vec<Error> {
    let mut c = Checker { problems: Vec::new() };
    let root = &program.root;
    let segments = program.segments.len();
    if let (Some(true), Some(buffers)) = (c.ok(program.constants_in_segment()), c.ok(root.vector("constant_buffer"))) {
        if !buffers.is_empty() {
            c.fail(Rule::BadField, "constants in both constant_segment and constant_buffer".into());
        }
        if let Some(Some(cs)) = c.ok(root.table("constant_segment")) {
            let index = cs.int("segment_index").unwrap_or(-1);
            c.index("constant segment index", index, segments);
        }
    }
    for list in c.ok(root.tables("mutable_data_segments")).unwrap_or_default() {
        let index = list.int("segment_index").unwrap_or(-1);
        c.index("mutable data segment index", index, segments);
    }
    for nd in c.ok(root.tables("named_data")).unwrap_or_default() {
        let index = nd.int("segment_index").unwrap_or(-1);
        c.index("named data segment index", index, segments);
    }
    let inline = c.ok(root.vector("backend_delegate_data")).map_or(0, <[Value]>::len);
    for plan in c.ok(root.tables("execution_plan")).unwrap_or_default() {
        method(&mut c, plan, segments, inline);
    }
    c.problems
}

fn method(c: &mut Checker, plan: &Table, segments: usize, inline: usize) {
    let name = plan.str("name").ok().flatten().unwrap_or("?").to_string();
    for field in ["name", "non_const_buffer_sizes", "inputs", "outputs"] {
        if !plan.has(field) {
            c.fail(Rule::MissingField, format!("method {name}: no {field}"));
        }
    }
    let values = c.ok(plan.vector("values")).unwrap_or(&[]);
    let n = values.len();
    let buffers = c.ok(plan.ints("non_const_buffer_sizes")).unwrap_or_default();
    if let Some(b) = buffers.iter().find(|&&b| b < 0) {
        c.fail(Rule::BadField, format!("method {name}: negative buffer size {b}"));
    }
    for field in ["inputs", "outputs"] {
        for i in c.ok(plan.ints(field)).unwrap_or_default() {
            c.index(&format!("method {name}: {field} value"), i, n);
        }
    }
    for (i, v) in values.iter().enumerate() {
        let Value::Table(ev) = v else { continue };
        let Some(Some(u)) = c.ok(ev.union("val")) else { continue };
        let Some(t) = &u.value else {
            c.fail(Rule::MissingField, format!("method {name}: value {i} of type {} has no data", u.variant()));
            continue;
        };
        let what = format!("method {name}: value {i}");
        match u.variant() {
            "Tensor" => tensor(c, t, &what, &buffers),
            "TensorList" => {
                for item in c.ok(t.ints("items")).unwrap_or_default() {
                    c.index(&format!("{what}: list item"), item, n);
                }
            }
            "OptionalTensorList" => {
                for item in c.ok(t.ints("items")).unwrap_or_default().into_iter().filter(|&i| i != -1) {
                    c.index(&format!("{what}: list item"), item, n);
                }
            }
            _ => {}
        }
    }
    let operators = c.ok(plan.vector("operators")).map_or(0, <[Value]>::len);
    let delegates = c.ok(plan.tables("delegates")).unwrap_or_default();
    for (i, d) in delegates.iter().enumerate() {
        match c.ok(d.table("processed")).flatten() {
            None => c.fail(Rule::MissingField, format!("method {name}: delegate {i} has no data reference")),
            Some(p) => {
                let index = p.int("index").unwrap_or(-1);
                if p.int("location").unwrap_or(0) == 0 {
                    c.index(&format!("method {name}: delegate {i} inline data"), index, inline);
                } else {
                    c.index(&format!("method {name}: delegate {i} segment"), index, segments);
                }
            }
        }
    }
    for (k, chain) in c.ok(plan.tables("chains")).unwrap_or_default().iter().enumerate() {
        let what = format!("method {name}: chain {k}");
        for field in ["inputs", "outputs"] {
            for i in c.ok(chain.ints(field)).unwrap_or_default() {
                c.index(&format!("{what}: {field} value"), i, n);
            }
        }
        let instructions = c.ok(chain.tables("instructions")).unwrap_or_default();
        for (j, ins) in instructions.iter().enumerate() {
            let Some(Some(u)) = c.ok(ins.union("instr_args")) else {
                c.fail(Rule::MissingField, format!("{what}: instruction {j} has no arguments"));
                continue;
            };
            let Some(a) = &u.value else { continue };
            let what = format!("{what}: instruction {j} ({})", u.variant());
            let int = |f: &str| a.int(f).unwrap_or(-1);
            match u.variant() {
                "KernelCall" | "DelegateCall" => {
                    let (field, len) = if u.variant() == "KernelCall" {
                        ("op_index", operators)
                    } else {
                        ("delegate_index", delegates.len())
                    };
                    c.index(&format!("{what}: {field}"), int(field), len);
                    for arg in c.ok(a.ints("args")).unwrap_or_default() {
                        c.index(&format!("{what}: argument value"), arg, n);
                    }
                }
                "MoveCall" => {
                    c.index(&format!("{what}: move_from"), int("move_from"), n);
                    c.index(&format!("{what}: move_to"), int("move_to"), n);
                }
                "JumpFalseCall" => {
                    c.index(&format!("{what}: condition value"), int("cond_value_index"), n);
                    c.index(&format!("{what}: destination"), int("destination_instruction"), instructions.len());
                }
                "FreeCall" => c.index(&format!("{what}: value"), int("value_index"), n),
                _ => {}
            }
        }
    }
}

/// A tensor value: layout rules, and planned memory inside its arena.
fn tensor(c: &mut Checker, t: &Table, what: &str, buffers: &[i64]) {
    let layout = match TensorLayout::from_table(t) {
        Ok(l) => l,
        Err(e) => {
            let rule = match e.kind() {
                crate::error::ErrorKind::Invalid { rule, .. } => *rule,
                _ => Rule::BadField,
            };
            return c.fail(rule, format!("{what}: {}", e.detail()));
        }
    };
    let storage_offset = t.int("storage_offset").unwrap_or(0);
    if storage_offset != 0 {
        c.fail(Rule::BadField, format!("{what}: storage_offset {storage_offset}, the runtime needs 0"));
    }
    let Some(Some(alloc)) = c.ok(t.table("allocation_info")) else { return };
    let id = alloc.int("memory_id").unwrap_or(-1);
    c.index(&format!("{what}: memory_id"), id, buffers.len());
    let arena = usize::try_from(id).ok().and_then(|i| buffers.get(i)).copied().unwrap_or(0);
    let offset = (alloc.uint("memory_offset_high").unwrap_or(0) << 32) | alloc.uint("memory_offset_low").unwrap_or(0);
    let fits = layout.nbytes().ok().and_then(|n| n.checked_add(offset)).is_some_and(|end| end <= arena.max(0) as u64);
    if !fits && usize::try_from(id).is_ok_and(|i| i < buffers.len()) {
        c.fail(Rule::OutOfBounds, format!("{what}: planned at {offset} in memory {id}, past its {arena} bytes"));
    }
}
