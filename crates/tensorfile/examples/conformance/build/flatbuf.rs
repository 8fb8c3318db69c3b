//! A `.ptd` flatbuffer laid out by hand, for what an encoder would never write: many offsets
//! pointing at one shared subtree.

fn pad4(out: &mut Vec<u8>) {
    while out.len() % 4 != 0 {
        out.push(0);
    }
}

/// A vtable of `slots` field offsets for a table of `table_len` bytes.
fn vtable(out: &mut Vec<u8>, table_len: u16, slots: &[u16]) -> usize {
    let at = out.len();
    out.extend_from_slice(&(4 + 2 * slots.len() as u16).to_le_bytes());
    out.extend_from_slice(&table_len.to_le_bytes());
    for s in slots {
        out.extend_from_slice(&s.to_le_bytes());
    }
    pad4(out);
    at
}

fn u32le(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A `.ptd` whose `named_data` vector holds `n` offsets to one `NamedData` table, whose
/// `TensorLayout` has `m` sizes: about `4 (n + m)` bytes that decode to `n * m` values.
pub fn ptd_shared_subtrees(n: u32, m: u32) -> Vec<u8> {
    let mut out = vec![0u8; 56];
    out[4..8].copy_from_slice(b"FT01");
    let flat_tensor_vt = vtable(&mut out, 8, &[0, 0, 4]);
    let root = out.len();
    u32le(&mut out, (root - flat_tensor_vt) as u32);
    let named_data_field = out.len();
    u32le(&mut out, 0); // patched below
    let named_data_vt = vtable(&mut out, 16, &[4, 8, 12]);
    let layout_vt = vtable(&mut out, 12, &[4, 8, 0]);
    let vector = out.len();
    let table = vector + 4 + 4 * n as usize;
    out[named_data_field..named_data_field + 4].copy_from_slice(&((vector - named_data_field) as u32).to_le_bytes());
    u32le(&mut out, n);
    for i in 0..n as usize {
        let at = vector + 4 + 4 * i;
        u32le(&mut out, (table - at) as u32);
    }
    // NamedData { key: "w", segment_index: 0, tensor_layout }
    let key = table + 16;
    let layout = key + 8;
    u32le(&mut out, (table - named_data_vt) as u32);
    u32le(&mut out, (key - (table + 4)) as u32);
    u32le(&mut out, 0);
    u32le(&mut out, (layout - (table + 12)) as u32);
    u32le(&mut out, 1);
    out.extend_from_slice(b"w\0\0\0");
    // TensorLayout { scalar_type: BYTE, sizes: [1; m] }
    let sizes = layout + 12;
    u32le(&mut out, (layout - layout_vt) as u32);
    u32le(&mut out, 0);
    u32le(&mut out, (sizes - (layout + 8)) as u32);
    u32le(&mut out, m);
    for _ in 0..m {
        u32le(&mut out, 1);
    }
    out[0..4].copy_from_slice(&(root as u32).to_le_bytes());
    // The FH01 header: the flatbuffer is the whole file, no segments.
    let fb_size = out.len() as u64 - 48;
    out[8..12].copy_from_slice(b"FH01");
    out[12..16].copy_from_slice(&40u32.to_le_bytes());
    out[16..24].copy_from_slice(&48u64.to_le_bytes());
    out[24..32].copy_from_slice(&fb_size.to_le_bytes());
    out
}
