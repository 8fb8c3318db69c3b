//! Readers of the two containers the rewritten-file checks need, written here from the formats'
//! layouts so that the checks do not go through tensorfile's own readers: the members of a
//! stored (uncompressed) zip archive, and the tensors of a safetensors file.

use std::collections::BTreeMap;

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap()) as usize
}

fn u32_at(b: &[u8], at: usize) -> u64 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as u64
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The members of a zip archive in central-directory order: (name, bytes). Every member must
/// be stored (method 0), as torch's and tensorfile's archives are.
pub fn zip_members(zip: &[u8]) -> Vec<(String, Vec<u8>)> {
    let eocd = zip.windows(4).rposition(|w| w == b"PK\x05\x06").expect("an end of central directory record");
    let (mut count, mut cd_offset) = (u16_at(zip, eocd + 10) as u64, u32_at(zip, eocd + 16));
    if count == 0xFFFF || cd_offset == 0xFFFF_FFFF {
        // The zip64 locator sits just before the end record and points at the zip64 one.
        let locator = eocd - 20;
        assert_eq!(&zip[locator..locator + 4], b"PK\x06\x07", "a zip64 end locator");
        let end64 = u64_at(zip, locator + 8) as usize;
        assert_eq!(&zip[end64..end64 + 4], b"PK\x06\x06", "a zip64 end record");
        (count, cd_offset) = (u64_at(zip, end64 + 32), u64_at(zip, end64 + 48));
    }
    let mut at = cd_offset as usize;
    let mut members = Vec::new();
    for _ in 0..count {
        assert_eq!(&zip[at..at + 4], b"PK\x01\x02", "a central directory entry at {at}");
        let method = u16_at(zip, at + 10);
        let (mut size, mut local) = (u32_at(zip, at + 24), u32_at(zip, at + 42));
        let (name_len, extra_len, comment_len) = (u16_at(zip, at + 28), u16_at(zip, at + 30), u16_at(zip, at + 32));
        let name = String::from_utf8(zip[at + 46..at + 46 + name_len].to_vec()).unwrap();
        let compressed = u32_at(zip, at + 20);
        // zip64 extra field: the fields whose 32-bit value is all ones, in this order.
        let mut extra = at + 46 + name_len;
        let extra_end = extra + extra_len;
        while extra + 4 <= extra_end {
            let (id, len) = (u16_at(zip, extra), u16_at(zip, extra + 2));
            if id == 1 {
                let mut field = extra + 4;
                if size == 0xFFFF_FFFF {
                    size = u64_at(zip, field);
                    field += 8;
                }
                if compressed == 0xFFFF_FFFF {
                    field += 8;
                }
                if local == 0xFFFF_FFFF {
                    local = u64_at(zip, field);
                }
            }
            extra += 4 + len;
        }
        assert_eq!(method, 0, "{name} is stored");
        let local = local as usize;
        assert_eq!(&zip[local..local + 4], b"PK\x03\x04", "{name}: a local header");
        let data = local + 30 + u16_at(zip, local + 26) + u16_at(zip, local + 28);
        members.push((name, zip[data..data + size as usize].to_vec()));
        at = extra_end + comment_len;
    }
    members
}

/// A safetensors file's tensors by name: (dtype as safetensors spells it, shape, bytes).
pub fn safetensors_tensors(file: &[u8]) -> BTreeMap<String, (String, Vec<u64>, Vec<u8>)> {
    let header_len = u64_at(file, 0) as usize;
    let header: serde_json::Value = serde_json::from_slice(&file[8..8 + header_len]).unwrap();
    let data = &file[8 + header_len..];
    let mut tensors = BTreeMap::new();
    for (name, t) in header.as_object().unwrap() {
        if name == "__metadata__" {
            continue;
        }
        let offsets: Vec<usize> =
            t["data_offsets"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
        let shape = t["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        let dtype = t["dtype"].as_str().unwrap().to_string();
        tensors.insert(name.clone(), (dtype, shape, data[offsets[0]..offsets[1]].to_vec()));
    }
    tensors
}
