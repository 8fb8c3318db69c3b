//! Any text parsed as a `meta --set` argument (`KEY=VALUE`, `KEY:TYPE=VALUE`) and resolved
//! against an existing value of one of GGUF's kinds (the first byte picks it): an error, or a
//! value of the type given, else of the existing value's; never a panic.
#![no_main]
// fuzz-smoke: seeds *.metaset
// fuzz-smoke: max-len 4096

use tensorfile::model::{MetaValue, Number, TypedArray};
use tensorfile::{Assignment, Given, MetaType};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let Ok(arg) = std::str::from_utf8(rest) else { return };
    let existing = match pick % 6 {
        0 => None,
        1 => Some(MetaValue::Number(Number::U32(1))),
        2 => Some(MetaValue::Text(String::new())),
        3 => Some(MetaValue::Bool(false)),
        4 => Some(MetaValue::TypedArray(TypedArray::I16(vec![]))),
        _ => Some(MetaValue::TypedArray(TypedArray::Text(vec![]))),
    };
    let Ok(a) = Assignment::parse(arg) else { return };
    let Given::Text(text) = &a.given else { return };
    let typed = pick & 0x80 == 0;
    if let Ok(value) = a.resolve(text, existing.as_ref(), typed) {
        let want = a.ty.clone().or_else(|| existing.as_ref().and_then(MetaType::of));
        if let Some(want) = want {
            assert_eq!(MetaType::of(&value), Some(want), "{arg:?} resolved to another type");
        }
        if !typed {
            assert!(matches!(value, MetaValue::Text(_)), "{arg:?}: text only, yet {value:?}");
        }
        let _ = value.to_json();
    }
});
