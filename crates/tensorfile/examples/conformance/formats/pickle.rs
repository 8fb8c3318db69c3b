//! Pickles, each the `data.pkl` of a `torch.save` archive (format `pt`): forbidden globals,
//! memo and stack explosions, malformed opcode streams. Written opcode by opcode.

use tensorfile::{Format, Rule};

use super::Fixtures;
use super::pt::{floats, torch_save};
use crate::build::pickle::{P, one_float_tensor};
use crate::build::zip::{Entry, build};
use crate::case::{Family as F, Folder};

/// A torch.save archive around `pkl` with one float32 storage `0` of 6 elements.
fn archive(pkl: &[u8]) -> Vec<u8> {
    build(&torch_save(pkl, &[("0", &floats(6))])).bytes
}

/// The same, with `data.pkl` deflated (large, repetitive pickles stay a few kilobytes).
fn deflated(pkl: &[u8]) -> Vec<u8> {
    let mut entries = torch_save(pkl, &[("0", &floats(6))]);
    entries[0] = Entry::deflated("archive/data.pkl", pkl);
    build(&entries).bytes
}

/// `{"w": tensor}` built with protocol 4's opcodes: FRAME, SHORT_BINUNICODE, STACK_GLOBAL,
/// MEMOIZE, and a LONG_BINPUT/LONG_BINGET pair at memo key `key`.
fn protocol4(key: u32) -> Vec<u8> {
    let mut body = P::default().op(b'}').op(0x94).op(b'(');
    let short = |p: P, s: &str| p.op(0x8c).op(s.len() as u8).raw(s.as_bytes()).op(0x94);
    body = short(body, "w");
    body = short(body, "torch._utils");
    body = short(body, "_rebuild_tensor_v2");
    body = body.op(0x93).op(0x94).op(b'r').raw(&key.to_le_bytes()).op(b'0');
    body = body.op(b'j').raw(&key.to_le_bytes());
    // The arguments as protocol 2 writes them, after the callable.
    let mut args = P::default()
        .op(b'(')
        .op(b'(')
        .text("storage")
        .global("torch", "FloatStorage")
        .text("0")
        .text("cpu")
        .int(6)
        .op(b't')
        .op(b'Q');
    args = args
        .int(0)
        .ints(&[2, 3])
        .ints(&[3, 1])
        .op(0x89)
        .global("collections", "OrderedDict")
        .op(b')')
        .op(b'R')
        .op(b't')
        .op(b'R');
    let body = body.raw(&args.0).op(b'u').op(b'.').0;
    let mut p = P::proto(4).op(0x95).raw(&(body.len() as u64).to_le_bytes()).0;
    p.extend_from_slice(&body);
    p
}

pub fn cases(_fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("pickle", Format::Pt, "pt");
    f.valid(
        "protocol-2",
        F::Valid,
        "a state dict as torch.save pickles it (protocol 2)",
        archive(&one_float_tensor(&[2, 3])),
    );
    f.valid(
        "protocol-4",
        F::Valid,
        "the same built with protocol 4's FRAME, STACK_GLOBAL and MEMOIZE",
        archive(&protocol4(7)),
    );
    f.valid(
        "sparse-memo-key",
        F::MemoExplosion,
        "a LONG_BINPUT at memo key 2^32-1: a sparse key must not allocate 2^32 slots",
        archive(&protocol4(u32::MAX)),
    );

    let fg = Rule::ForbiddenGlobal;
    let call =
        |module: &str, name: &str| P::proto(2).global(module, name).text("touch /tmp/pwned").op(0x85).op(b'R').stop();
    f.open(
        "os-system",
        F::ForbiddenGlobal,
        fg,
        "GLOBAL os.system, called with a shell command",
        archive(&call("os", "system")),
    );
    f.open(
        "posix-system",
        F::ForbiddenGlobal,
        fg,
        "GLOBAL posix.system (what os.system pickles as on Linux)",
        archive(&call("posix", "system")),
    );
    f.open("builtins-eval", F::ForbiddenGlobal, fg, "GLOBAL builtins.eval", archive(&call("builtins", "eval")));
    f.open(
        "builtins-getattr",
        F::ForbiddenGlobal,
        fg,
        "GLOBAL builtins.getattr (the first step of most gadget chains)",
        archive(&call("builtins", "getattr")),
    );
    f.open(
        "subprocess-popen",
        F::ForbiddenGlobal,
        fg,
        "GLOBAL subprocess.Popen",
        archive(&call("subprocess", "Popen")),
    );
    f.open(
        "torch-load",
        F::ForbiddenGlobal,
        fg,
        "GLOBAL torch.load (a nested unrestricted load)",
        archive(&call("torch", "load")),
    );
    f.open(
        "numpy-reconstruct",
        F::ForbiddenGlobal,
        fg,
        "GLOBAL numpy.core.multiarray._reconstruct",
        archive(&call("numpy.core.multiarray", "_reconstruct")),
    );
    let stack_global = P::proto(4).op(0x8c).op(2).raw(b"os").op(0x8c).op(6).raw(b"system").op(0x93).stop();
    f.open("stack-global-os-system", F::ForbiddenGlobal, fg, "STACK_GLOBAL of os.system", archive(&stack_global));
    let named = P::proto(2).global("torch", "Tensor").op(b')').op(b'R').stop();
    f.open(
        "allowed-name-called",
        F::ForbiddenGlobal,
        fg,
        "REDUCE on torch.Tensor: an allowed name that may not be called",
        archive(&named),
    );

    let tm = Rule::TooManyEntries;
    let mut memo = P::proto(4).op(b'N').0;
    memo.extend(std::iter::repeat_n(0x94u8, (1 << 20) + 1));
    memo.push(b'.');
    f.open(
        "memoize-bomb",
        F::MemoExplosion,
        tm,
        "2^20+1 MEMOIZE opcodes: the memo grows past its limit",
        deflated(&memo),
    );
    let mut dup = P::proto(2).op(b']').0;
    dup.extend(std::iter::repeat_n(b'2', (1 << 22) + 1));
    dup.push(b'.');
    f.open("dup-bomb", F::MemoExplosion, tm, "2^22+1 DUP opcodes: the stack grows past its limit", deflated(&dup));
    let cyclic = b"\x80\x02]q\x00(h\x00h\x00h\x00h\x00e.".to_vec();
    f.open(
        "self-containing-list",
        F::MemoExplosion,
        Rule::TooDeep,
        "a list holding itself 4 times through the memo: flattening it must stop",
        archive(&cyclic),
    );
    let mut shared = P::proto(2).op(b']').op(b'q').op(0).0;
    for _ in 0..24 {
        // l = [l, l]: each level doubles what flattening would visit.
        shared.extend_from_slice(b"(h\x00h\x00lq\x00");
    }
    shared.push(b'.');
    f.open(
        "shared-lists",
        F::MemoExplosion,
        tm,
        "24 levels of [x, x] through the memo: 2^24 paths from 250 bytes",
        archive(&shared),
    );

    let mut deep = P::proto(2).0;
    deep.extend(std::iter::repeat_n(b']', 100));
    deep.extend(std::iter::repeat_n(b'a', 99));
    deep.push(b'.');
    f.open("deep-lists", F::DeepNesting, Rule::TooDeep, "100 nested lists", archive(&deep));

    let bp = Rule::BadPickle;
    let mp = F::MalformedPickle;
    f.open("stop-on-empty-stack", mp, bp, "STOP with nothing on the stack", archive(b"\x80\x02."));
    f.open("reduce-underflow", mp, bp, "REDUCE with one item on the stack", archive(b"\x80\x02NR."));
    f.open("pop-across-mark", mp, bp, "POP of the item below a MARK", archive(b"\x80\x02N(0."));
    f.open("tuple-without-mark", mp, bp, "TUPLE with no MARK", archive(b"\x80\x02Nt."));
    f.open("setitems-on-a-list", mp, bp, "SETITEMS on a list", archive(b"\x80\x02](NNu."));
    f.open("append-to-a-dict", mp, bp, "APPEND to a dict", archive(b"\x80\x02}Na."));
    f.open("unknown-opcode", mp, bp, "opcode 0xff", archive(b"\x80\x02\xff."));
    f.open(
        "ext-opcode",
        mp,
        bp,
        "EXT1 (the extension registry is not used by torch.save)",
        archive(b"\x80\x02\x82\x01."),
    );
    f.open("text-persistent-id", mp, bp, "PERSID with a text id", archive(b"\x80\x02P0\n."));
    f.open(
        "memo-read-before-write",
        mp,
        bp,
        "LONG_BINGET of key 2^32-1, never written",
        archive(b"\x80\x02j\xff\xff\xff\xff."),
    );
    f.open("unterminated-global", mp, bp, "GLOBAL without its newlines", archive(b"\x80\x02ctorch"));
    f.open("bad-integer", mp, bp, "INT with the text 12x", archive(b"\x80\x02I12x\n."));
    f.open(
        "persistent-id-not-storage",
        mp,
        bp,
        "a persistent id that is not a storage tuple",
        archive(b"\x80\x02X\x03\x00\x00\x00abcQ."),
    );
    f.open("no-stop", F::Truncation, Rule::Truncated, "a pickle that ends without STOP", archive(b"\x80\x02N"));
    f.open(
        "string-length-past-end",
        F::PastEnd,
        Rule::Truncated,
        "BINUNICODE of 2^32-1 bytes",
        archive(b"\x80\x02X\xff\xff\xff\xffab."),
    );
    f.open(
        "bytes-length-past-end",
        F::PastEnd,
        Rule::Truncated,
        "BINBYTES8 of 2^64-1 bytes",
        archive(b"\x80\x04\x8e\xff\xff\xff\xff\xff\xff\xff\xffab."),
    );
    f.open(
        "string-bad-utf8",
        F::BadUtf8,
        Rule::BadUtf8,
        "BINUNICODE with the bytes ff fe",
        archive(b"\x80\x02X\x02\x00\x00\x00\xff\xfe."),
    );

    let dup_names = P::proto(2).op(b'}').op(b'(').text("a.b");
    let dup_names = dup_names.tensor("FloatStorage", "0", 6, 0, &[6], &[1]).text("a").op(b'}').op(b'(').text("b");
    let dup_names = dup_names.tensor("FloatStorage", "0", 6, 0, &[6], &[1]).op(b'u').op(b'u').stop();
    f.verify(
        "duplicate-flattened-names",
        F::DuplicateName,
        Rule::DuplicateName,
        "{\"a.b\": t, \"a\": {\"b\": t}}: two tensors named a.b",
        archive(&dup_names),
    );
    Ok(f)
}
