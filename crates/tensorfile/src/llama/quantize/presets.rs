//! llama-quantize's presets: the names it takes on its command line, the file type
//! (`llama_ftype`) each writes as `general.file_type`, and the ggml type each starts every
//! quantizable tensor from before its rules pick another.

use crate::model::quant::GgmlType;

/// One of llama-quantize's presets (`Q4_K_M`, `IQ2_XXS`, `COPY`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Preset {
    name: &'static str,
    file_type: u32,
    /// The ggml type number tensors start from (a number, not a [`GgmlType`], so that a preset
    /// of a type this library does not know yet is still named).
    default_type: u32,
}

macro_rules! presets {
    ($($name:literal = $ftype:literal => $default:literal;)*) => {
        /// Every preset, in the order of llama-quantize's table (which decides what a number
        /// names: `0` is `F32`, listed before `COPY`).
        const PRESETS: &[Preset] = &[$(Preset { name: $name, file_type: $ftype, default_type: $default }),*];
    };
}

// Facts of tools/quantize/quantize.cpp (QUANT_OPTIONS) and src/llama-quant.cpp
// (llama_ftype_get_default_type); type numbers are ggml's.
presets! {
    "Q1_0" = 40 => 41;
    "Q2_0" = 41 => 42;
    "Q4_0" = 2 => 2;
    "Q4_1" = 3 => 3;
    "MXFP4_MOE" = 38 => 39;
    "Q5_0" = 8 => 6;
    "Q5_1" = 9 => 7;
    "IQ2_XXS" = 19 => 16;
    "IQ2_XS" = 20 => 17;
    "IQ2_S" = 28 => 17;
    "IQ2_M" = 29 => 22;
    "IQ1_S" = 24 => 19;
    "IQ1_M" = 31 => 29;
    "TQ1_0" = 36 => 34;
    "TQ2_0" = 37 => 35;
    "Q2_K" = 10 => 10;
    "Q2_K_S" = 21 => 10;
    "IQ3_XXS" = 23 => 18;
    "IQ3_S" = 26 => 21;
    "IQ3_M" = 27 => 21;
    "Q3_K" = 12 => 11;
    "IQ3_XS" = 22 => 21;
    "Q3_K_S" = 11 => 11;
    "Q3_K_M" = 12 => 11;
    "Q3_K_L" = 13 => 11;
    "IQ4_NL" = 25 => 20;
    "IQ4_XS" = 30 => 23;
    "Q4_K" = 15 => 12;
    "Q4_K_S" = 14 => 12;
    "Q4_K_M" = 15 => 12;
    "Q5_K" = 17 => 13;
    "Q5_K_S" = 16 => 13;
    "Q5_K_M" = 17 => 13;
    "Q6_K" = 18 => 14;
    "Q8_0" = 7 => 8;
    "F16" = 1 => 1;
    "BF16" = 32 => 30;
    "F32" = 0 => 0;
    "COPY" = 0 => 0;
}

impl Preset {
    /// Every preset, in llama-quantize's order.
    pub fn all() -> &'static [Preset] {
        PRESETS
    }

    /// The preset `text` names, as llama-quantize reads it: a name in any case (`q4_k_m`), or
    /// the file type's number (`15`, giving the first preset of that number in the table).
    pub fn parse(text: &str) -> Option<Preset> {
        if let Some(p) = PRESETS.iter().find(|p| p.name.eq_ignore_ascii_case(text)) {
            return Some(*p);
        }
        let number = leading_int(text)?;
        PRESETS.iter().find(|p| i64::from(p.file_type) == number).copied()
    }

    /// The preset's name (`Q4_K_M`).
    pub fn name(self) -> &'static str {
        self.name
    }

    /// The file type llama.cpp numbers it (`general.file_type`; `COPY` writes the input's).
    pub fn file_type(self) -> u32 {
        self.file_type
    }

    /// The ggml type every quantizable tensor starts from; `None` when this library does not
    /// know that type yet (see [`Preset::default_type_id`]).
    pub fn default_type(self) -> Option<GgmlType> {
        GgmlType::from_id(self.default_type)
    }

    /// The ggml type number every quantizable tensor starts from.
    pub fn default_type_id(self) -> u32 {
        self.default_type
    }

    /// Whether the preset copies tensors as they are (`COPY`).
    pub fn only_copies(self) -> bool {
        self.name == "COPY"
    }

    /// The preset that quantizes everything it can to `t` when its mixture rules are turned
    /// off (llama-quantize's `--pure`): the first in the table whose default type is `t`,
    /// `COPY` left out.
    pub fn for_type(t: GgmlType) -> Option<Preset> {
        PRESETS.iter().find(|p| !p.only_copies() && p.default_type == t.id()).copied()
    }
}

/// The file type llama.cpp guesses from a file's most common tensor type.
pub(super) fn guessed_file_type(t: GgmlType) -> u32 {
    use GgmlType::*;
    match t {
        F16 => 1,
        BF16 => 32,
        Q4_0 => 2,
        Q4_1 => 3,
        Q5_0 => 8,
        Q5_1 => 9,
        Q8_0 => 7,
        Q2_K => 10,
        Q3_K => 12,
        Q4_K => 15,
        Q5_K => 17,
        Q6_K => 18,
        TQ1_0 => 36,
        TQ2_0 => 37,
        IQ2_XXS => 19,
        IQ2_XS => 20,
        IQ2_S => 28,
        IQ3_XXS => 23,
        IQ1_S => 24,
        IQ1_M => 31,
        IQ4_NL => 25,
        IQ4_XS => 30,
        IQ3_S => 26,
        NVFP4 => 39,
        Q1_0 => 40,
        Q2_0 => 41,
        _ => 0,
    }
}

/// The number `text` starts with, as C++'s `std::stoi` reads it: leading white space, a sign,
/// digits (anything after them ignored); `None` when there are no digits or the number does
/// not fit an `int`.
fn leading_int(text: &str) -> Option<i64> {
    let t = text.trim_start_matches([' ', '\t', '\n', '\u{b}', '\u{c}', '\r']);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let mut value: i64 = 0;
    for b in t[..digits].bytes() {
        value = value.checked_mul(10)?.checked_add(i64::from(b - b'0'))?;
        if value > i64::from(i32::MAX) + 1 {
            return None;
        }
    }
    let value = if negative { -value } else { value };
    i32::try_from(value).ok().map(i64::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_parse_as_llama_quantize_reads_them() {
        assert_eq!(Preset::parse("q4_k_m").map(Preset::file_type), Some(15));
        assert_eq!(Preset::parse("Q4_K").map(Preset::name), Some("Q4_K"));
        assert_eq!(Preset::parse("15").map(Preset::name), Some("Q4_K"));
        assert_eq!(Preset::parse(" 0").map(Preset::name), Some("F32"));
        assert_eq!(Preset::parse("copy").map(Preset::only_copies), Some(true));
        assert_eq!(Preset::parse("7x").map(Preset::name), Some("Q8_0"));
        assert_eq!(Preset::parse("4"), None);
        assert_eq!(Preset::parse("99999999999"), None);
        assert_eq!(Preset::parse("Q9_K"), None);
    }

    #[test]
    fn a_type_names_its_first_preset() {
        assert_eq!(Preset::for_type(GgmlType::Q4_K).map(Preset::name), Some("Q4_K"));
        assert_eq!(Preset::for_type(GgmlType::IQ2_XS).map(Preset::name), Some("IQ2_XS"));
        assert_eq!(Preset::for_type(GgmlType::IQ2_S).map(Preset::name), Some("IQ2_M"));
        assert_eq!(Preset::for_type(GgmlType::F32).map(Preset::name), Some("F32"));
        assert_eq!(Preset::for_type(GgmlType::Q8_1), None);
    }
}
