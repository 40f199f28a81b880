//! Known-answer blocks built field by field from the format definitions (the extremes of each
//! field among them), quantize/dequantize round trips on random data, and the typed errors.

use super::*;
use half::f16;

fn h(v: f32) -> [u8; 2] {
    f16::from_f32(v).to_bits().to_le_bytes()
}

fn decode(t: QuantType, block: &[u8]) -> Vec<f32> {
    let mut y = vec![f32::NAN; t.block_values()];
    dequantize(t, block, &mut y).unwrap();
    y
}

#[test]
fn q8_0_is_scale_times_signed_bytes() {
    let mut b = vec![0u8; 34];
    b[0..2].copy_from_slice(&h(0.5));
    b[2] = 0x80; // -128
    b[3] = 0x7f; // 127
    b[4] = 1;
    let y = decode(QuantType::Q8_0, &b);
    assert_eq!(&y[..4], &[-64.0, 63.5, 0.5, 0.0]);
    // The largest f16 scale.
    b[0..2].copy_from_slice(&0x7bffu16.to_le_bytes());
    assert_eq!(decode(QuantType::Q8_0, &b)[1], 65504.0 * 127.0);
}

#[test]
fn four_and_five_bit_32_value_blocks_split_low_and_high_nibbles() {
    // Q4_0: value j from the low nibble of byte j, j + 16 from its high nibble, minus 8.
    let mut b = vec![0u8; 18];
    b[0..2].copy_from_slice(&h(2.0));
    b[2] = 0x0f;
    let y = decode(QuantType::Q4_0, &b);
    assert_eq!((y[0], y[16], y[1]), (14.0, -16.0, -16.0));
    // Q4_1: `q * d + m`.
    let mut b = vec![0u8; 20];
    b[0..2].copy_from_slice(&h(1.0));
    b[2..4].copy_from_slice(&h(-3.0));
    b[5] = 0xf0;
    let y = decode(QuantType::Q4_1, &b);
    assert_eq!((y[1], y[17], y[0]), (-3.0, 12.0, -3.0));
    // Q5_0: fifth bit j of qh (little-endian u32) for value j, bit j + 16 for value j + 16.
    let mut b = vec![0u8; 22];
    b[0..2].copy_from_slice(&h(1.0));
    b[2..6].copy_from_slice(&(1u32 | 1 << 16 | 1 << 31).to_le_bytes());
    b[6] = 0xff;
    b[21] = 0x0f;
    let y = decode(QuantType::Q5_0, &b);
    assert_eq!((y[0], y[16], y[1], y[15], y[31]), (15.0, 15.0, -16.0, -1.0, 0.0));
    // Q5_1: the same codes, `q * d + m`.
    let mut b = vec![0u8; 24];
    b[0..2].copy_from_slice(&h(0.25));
    b[2..4].copy_from_slice(&h(1.0));
    b[4..8].copy_from_slice(&(1u32 << 3).to_le_bytes());
    b[8 + 3] = 0x1f;
    let y = decode(QuantType::Q5_1, &b);
    assert_eq!((y[3], y[19], y[0]), (31.0 * 0.25 + 1.0, 1.0 * 0.25 + 1.0, 1.0));
}

#[test]
fn q2_k_scales_and_minima_per_16_values() {
    let mut b = vec![0u8; 84];
    b[80..82].copy_from_slice(&h(1.0)); // d
    b[82..84].copy_from_slice(&h(0.5)); // dmin
    b[0] = 0x21; // sub-block 0: scale 1, minimum 2
    b[1] = 0xf3; // sub-block 1: scale 3, minimum 15
    b[2] = 0x0f; // sub-block 2: scale 15 (values 32.., bits 2-3 of bytes 0..16)
    b[16] = 0b1011; // value 0: 3; value 32: 2
    b[16 + 16] = 0b10; // value 16: 2
    b[15] = 0x10; // sub-block 15: scale 0, minimum 1 (values 240.., bits 6-7 of bytes 48..64)
    b[16 + 63] = 0xc0;
    let y = decode(QuantType::Q2K, &b);
    assert_eq!(y[0], 1.0 * 3.0 - 0.5 * 2.0);
    assert_eq!(y[16], 3.0 * 2.0 - 0.5 * 15.0);
    assert_eq!(y[32], 15.0 * 2.0);
    assert_eq!(y[255], 0.0 * 3.0 - 0.5);
}

#[test]
fn q3_k_signed_six_bit_scales_and_the_high_bit_mask() {
    let mut b = vec![0u8; 110];
    b[108..110].copy_from_slice(&h(1.0));
    // Scale 0 stored 33 (1): low nibble in byte 96, high two bits (0b10) in byte 104 bits 0-1.
    b[96] = 0x01;
    b[104] = 0b10;
    // Scale 15 stored 0 (-32): low nibble in byte 103's high nibble (zero), high bits zero.
    // Scale 9 stored 63 (31): low nibble in byte 97's high nibble, high bits byte 105 bits 4-5.
    b[97] = 0xf0;
    b[105] = 0b11 << 4;
    b[0] = 1; // hmask bit 0 of value 0: no -4
    b[32] = 0b11; // value 0: 3
                  // Value 1: code 0, hmask clear: -4.
                  // Value 16 * 9 = 144: half 1 (byte 32 + 32 + 16 = 80), shift 0, hmask bit 4 of byte 16.
    b[80] = 0b10;
    b[16] = 1 << 4;
    let y = decode(QuantType::Q3K, &b);
    assert_eq!((y[0], y[1]), (3.0, -4.0));
    assert_eq!(y[144], 31.0 * 2.0);
    assert_eq!(y[255], -32.0 * -4.0);
}

#[test]
fn q4_k_and_q5_k_six_bit_scales_and_minima() {
    let mut b = vec![0u8; 144];
    b[0..2].copy_from_slice(&h(1.0));
    b[2..4].copy_from_slice(&h(1.0));
    // Sub-block 0: scale 2, minimum 1; sub-block 4: scale 0b11_0101 (53), minimum 0b01_0110 (22).
    b[4] = 2 | (0b11 << 6);
    b[4 + 4] = 1 | (0b01 << 6);
    b[4 + 8] = 0b0101 | (0b0110 << 4);
    b[16] = 0x0f; // value 0: 15 (sub-block 0); value 32: 0 (sub-block 1, scale 0)
    b[16 + 64] = 0x07; // value 128: 7 (sub-block 4)
    let y = decode(QuantType::Q4K, &b);
    assert_eq!(y[0], 2.0 * 15.0 - 1.0);
    assert_eq!(y[128], 53.0 * 7.0 - 22.0);
    // Q5_K: the same fields, the fifth bit of value 128 (sub-block 4) in bit 4 of qh byte 0.
    let mut c = vec![0u8; 176];
    c[..16].copy_from_slice(&b[..16]);
    c[48] = 0x0f;
    c[48 + 64] = 0x07;
    c[16] = 1 << 4 | 1;
    let y = decode(QuantType::Q5K, &c);
    assert_eq!(y[0], 2.0 * 31.0 - 1.0);
    assert_eq!(y[128], 53.0 * 23.0 - 22.0);
}

#[test]
fn q6_k_codes_from_low_nibbles_and_two_high_bits() {
    let mut b = vec![0u8; 210];
    b[208..210].copy_from_slice(&h(1.0));
    b[192] = (-3i8) as u8; // sub-block 0
    b[192 + 2] = 127; // sub-block 2: values 32..48
    b[192 + 15] = 0x80; // sub-block 15: -128
    b[0] = 0x01; // value 0 low nibble 1
    b[128] = 0b10; // value 0 high bits 2: code 33, value 1
    b[32] = 0x0f; // value 32: low nibble 15, high bits (qh byte 0 bits 2-3) 0b11: code 63, 31
    b[128] |= 0b11 << 2;
    // Value 255: n = 1, k = 3, l = 31: high nibble of ql[64 + 31 + 32], qh[128 + 32 + 31] bits 6-7.
    let y = decode(QuantType::Q6K, &b);
    assert_eq!(y[0], -3.0 * 1.0);
    assert_eq!(y[32], 127.0 * 31.0);
    assert_eq!(y[255], -128.0 * -32.0);
}

#[test]
fn mxfp4_doubled_fp4_values_times_half_the_e8m0_scale() {
    let mut b = vec![0u8; 17];
    b[0] = 128; // 2^1, halved: 1
    b[1] = 0x7f; // value 0: code 15 (-6, doubled -12); value 16: code 7 (6, doubled 12)
    b[2] = 0x95; // value 1: code 5 (3 doubled 6)... high nibble 9: -0.5 doubled -1
    let y = decode(QuantType::Mxfp4, &b);
    assert_eq!((y[0], y[16], y[1], y[17]), (-12.0, 12.0, 6.0, -1.0));
    b[0] = 0; // 2^-127, halved: the subnormal 2^-128
    assert_eq!(decode(QuantType::Mxfp4, &b)[16], 12.0 * 2f32.powi(-128));
    b[0] = 255; // 2^128, halved: 2^127
    assert_eq!(decode(QuantType::Mxfp4, &b)[16], 12.0 * 2f32.powi(127));
}

#[test]
fn nvfp4_doubled_fp4_values_times_half_each_sub_blocks_e4m3_scale() {
    let mut b = vec![0u8; 36];
    b[0] = 0x38; // sub-block 0: exponent 7, mantissa 0: 1, halved 0.5
    b[4] = 0x7f; // value 0: code 15 (-6, doubled -12); value 8: code 7 (6, doubled 12)
    b[5] = 0x95; // value 1: code 5 (3, doubled 6); value 9: code 9 (-0.5, doubled -1)
    b[1] = 0x7f; // sub-block 1: E4M3's NaN, read as 0
    b[12] = 0x77; // values 16 and 24: code 7
    b[2] = 0xff; // sub-block 2: bit 7 ignored, exponent 15, mantissa 7: 480, halved 240
    b[20] = 0x07; // value 32: code 7; value 40: code 0
    b[3] = 0x01; // sub-block 3: exponent 0 (subnormal), mantissa 1: 2^-9, halved 2^-10
    b[35] = 0x70; // value 55: code 0; value 63: code 7
    let y = decode(QuantType::Nvfp4, &b);
    assert_eq!((y[0], y[8], y[1], y[9]), (-6.0, 6.0, 3.0, -0.5));
    assert_eq!((y[16], y[24]), (0.0, 0.0));
    assert_eq!((y[32], y[40]), (2880.0, 0.0));
    assert_eq!((y[55], y[63]), (0.0, 12.0 / 1024.0));
    // Every scale byte against ggml's `ggml_ue4m3_to_fp32` written out in f32.
    for x in 0..=255u8 {
        let (exp, man) = (i32::from((x >> 3) & 0xf), f32::from(x & 7));
        let raw = match exp {
            0 => man * 2f32.powi(-9),
            _ => (1.0 + man / 8.0) * 2f32.powi(exp - 7),
        };
        let want = if x == 0 || x == 0x7f { 0.0 } else { raw * 0.5 };
        assert_eq!(dequantize::ue4m3_half(x).to_bits(), want.to_bits(), "{x:#04x}");
    }
}

#[test]
fn iq4_nl_and_iq4_xs_scale_the_non_linear_table() {
    // IQ4_NL: `d * kvalues_iq4nl[code]`, value j's code the low nibble of byte j, j + 16's high.
    let mut b = vec![0u8; 18];
    b[0..2].copy_from_slice(&h(0.5));
    b[2] = 0xf0; // value 0: code 0 (-127); value 16: code 15 (113)
    b[3] = 0x78; // value 1: code 8 (1); value 17: code 7 (-10)
    let y = decode(QuantType::Iq4Nl, &b);
    assert_eq!((y[0], y[16], y[1], y[17]), (-63.5, 56.5, 0.5, -5.0));
    // IQ4_XS: sub-block ib's 6-bit `ls`, low four bits nibble ib % 2 of scales_l[ib / 2], top
    // two bits 2 ib of scales_h; `dl = d * (ls - 32)`; its codes the 16 bytes at 8 + 16 ib.
    let mut b = vec![0u8; 136];
    b[0..2].copy_from_slice(&h(0.25));
    let scales_h: u16 = 3 << 2 | 2 << 14; // sub-block 1: 3; sub-block 7: 2
    b[2..4].copy_from_slice(&scales_h.to_le_bytes());
    b[4] = 0xf0; // sub-block 0: ls 0 (-32); sub-block 1: 15 | 3 << 4 = 63 (31)
    b[7] = 0x50; // sub-block 7: 5 | 2 << 4 = 37 (5)
    b[8] = 0x0f; // value 0: code 15; value 16: code 0
    b[24] = 0x08; // value 32: code 8; value 48: code 0
    b[135] = 0xf3; // value 239: code 3 (-65); value 255: code 15
    let y = decode(QuantType::Iq4Xs, &b);
    assert_eq!((y[0], y[16], y[1]), (-8.0 * 113.0, -8.0 * -127.0, -8.0 * -127.0));
    assert_eq!((y[32], y[48]), (7.75, 7.75 * -127.0));
    assert_eq!((y[239], y[255]), (1.25 * -65.0, 1.25 * 113.0));
    // The largest f16 scale at both ends of ls.
    b[0..2].copy_from_slice(&0x7bffu16.to_le_bytes());
    let y = decode(QuantType::Iq4Xs, &b);
    assert_eq!((y[16], y[48]), (65504.0 * -32.0 * -127.0, 65504.0 * 31.0 * -127.0));
}

/// A block's values back within a bound relative to its largest magnitude.
#[test]
fn every_format_round_trips_random_values() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0
    };
    for t in QuantType::ALL {
        // Relative error per block's largest magnitude: half a step of each format's codes,
        // plus its scales' own rounding.
        // Q4_0 and Q5_0 put the largest magnitude on the most negative code, so a value of
        // the other sign near it clips by up to one step (as ggml's do).
        let bound = match t {
            QuantType::Q8_0 => 0.006,
            QuantType::Q5_1 | QuantType::Q5K | QuantType::Q6K => 0.05,
            QuantType::Q5_0 => 0.07,
            QuantType::Q4_1 | QuantType::Q4K => 0.1,
            QuantType::Q4_0 => 0.13,
            // Clipping as Q4_0's, a step of a quarter of the sub-block's largest magnitude.
            QuantType::Q3K => 0.3,
            QuantType::Q2K => 0.5,
            // A power-of-two scale: the largest magnitude may clip from just under 8 to 6.
            QuantType::Mxfp4 => 0.3,
            // Half FP4's widest gap (4 to 6 of 6) and the E4M3 scale's rounding (a 16th).
            QuantType::Nvfp4 => 0.25,
            // Half the table's widest gap (24 of 127), or a value of the other sign than the
            // largest clipping at 113 of 127.
            QuantType::Iq4Nl => 0.13,
            // As IQ4_NL's, with a sub-block's scale rounded to a 32nd of the largest one (at
            // 31 of 32 for the other sign: 127 - 113 * 31 / 32 of 127).
            QuantType::Iq4Xs => 0.15,
        };
        let n = 4 * t.block_values();
        let x: Vec<f32> = (0..n).map(|i| next() * (1 + i % 7) as f32).collect();
        let q = quantize(t, &x).unwrap();
        assert_eq!(q.len(), t.bytes_for(n).unwrap());
        let mut y = vec![f32::NAN; n];
        dequantize(t, &q, &mut y).unwrap();
        for (bx, by) in x.chunks(t.block_values()).zip(y.chunks(t.block_values())) {
            let amax = bx.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            for (a, b) in bx.iter().zip(by) {
                assert!(
                    (a - b).abs() <= bound * amax,
                    "{t}: {a} came back as {b} (block max {amax})"
                );
            }
        }
        // Zeros stay zeros.
        let z = quantize(t, &vec![0.0; n]).unwrap();
        dequantize(t, &z, &mut y).unwrap();
        assert!(y.iter().all(|&v| v == 0.0), "{t}");
    }
}

#[test]
fn lengths_and_values_that_do_not_fit_are_typed_errors() {
    for t in QuantType::ALL {
        assert_eq!(QuantType::parse(t.name()).unwrap(), t);
        assert_eq!(QuantType::parse(&t.name().to_uppercase()).unwrap(), t);
        let n = t.block_values();
        let e = t.bytes_for(n + 1).unwrap_err();
        assert!(
            matches!(e, Error::InvalidOperand(ref m) if m.contains("multiple")),
            "{e}"
        );
        let mut y = vec![0.0; n];
        let e = dequantize(t, &vec![0; t.block_bytes() - 1], &mut y).unwrap_err();
        assert!(matches!(e, Error::InvalidOperand(_)), "{e}");
        let e = quantize(t, &vec![f32::NAN; n]).unwrap_err();
        assert!(matches!(e, Error::InvalidOperand(ref m) if m.contains("finite")), "{e}");
    }
    let e = QuantType::parse("q4_k_m").unwrap_err();
    assert!(e.to_string().contains("q4_K"), "{e}");
}

#[test]
fn device_blocks_start_on_words_where_the_padding_is_small() {
    for q in QuantType::ALL {
        let (file, device) = (q.block_bytes(), q.device_block_bytes());
        if q.block_values() == 256 {
            assert_eq!(device % 4, 0, "{q}: {device}");
            assert!(device - file <= 2, "{q}: {file} -> {device}");
        } else {
            assert_eq!(device, file, "{q}");
        }
        assert_eq!(q.device_bytes_for(512).unwrap(), 512 / q.block_values() * device);
    }
    assert!(QuantType::Q6K.device_bytes_for(100).is_err());
}

#[test]
fn interleaved_groups_hold_every_head_then_every_tail_each_byte_once() {
    for q in QuantType::ALL {
        let Some(i) = q.interleave() else {
            continue;
        };
        let size = q.device_block_bytes();
        // Upload scatters the file's blocks: none of these is padded.
        assert_eq!(size, q.block_bytes(), "{q}");
        assert_eq!(i.group_bytes(q) % 16, 0, "{q}");
        assert!(i.head < size, "{q}");
        // Two groups of blocks whose bytes count up (as u16 halves' low bytes would not).
        let blocks: Vec<u8> = (0..2 * i.group_bytes(q)).map(|x| (x % 251) as u8).collect();
        let mut out = vec![0xee; blocks.len()];
        i.scatter(q, &blocks, &mut out);
        for (g, group) in out.chunks_exact(i.group_bytes(q)).enumerate() {
            for j in 0..i.blocks {
                let file = &blocks[(g * i.blocks + j) * size..][..size];
                let mut block = vec![0xee; size];
                q.device_block(file, &mut block);
                assert_eq!(&group[j * i.head..][..i.head], &block[..i.head], "{q} head {j}");
                let tail = i.blocks * i.head + j * (size - i.head);
                assert_eq!(&group[tail..][..size - i.head], &block[i.head..], "{q} tail {j}");
            }
        }
        let k = i.blocks * q.block_values();
        assert!(
            q.interleaves(3 * k) && !q.interleaves(k + q.block_values()) && !q.interleaves(k + 1),
            "{q}"
        );
    }
    assert!(!QuantType::Q4K.interleaves(1 << 20));
}

#[test]
fn q6_k_device_blocks_hold_each_units_codes_together() {
    // Codes from a hash of their place, every scale 1 and d = 1, so the file's values are the
    // codes less 32 (the reference dequantizer reads them).
    let mut file: Vec<u8> = (0..210u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    file[192..208].fill(1);
    file[208..210].copy_from_slice(&h(1.0));
    let codes = decode(QuantType::Q6K, &file);
    let mut device = vec![0xee; QuantType::Q6K.device_block_bytes()];
    QuantType::Q6K.device_block(&file, &mut device);
    for (v, &want) in codes.iter().enumerate() {
        let (s, l) = (v / 32, v % 32);
        let low = (device[24 * s + l % 16] >> (4 * (l / 16))) & 0xf;
        let high = (device[24 * s + 16 + l % 8] >> (2 * (l / 8))) & 3;
        assert_eq!(f32::from(low | high << 4) - 32.0, want, "value {v}");
    }
    assert_eq!(&device[192..210], &file[192..210]);
    assert_eq!(&device[210..], &[0, 0]);
    // The other formats' blocks are the file's, padded with zeros.
    let regrouped = [
        QuantType::Q2K,
        QuantType::Q3K,
        QuantType::Q4K,
        QuantType::Q5K,
        QuantType::Q6K,
    ];
    for q in QuantType::ALL.into_iter().filter(|q| !regrouped.contains(q)) {
        let file: Vec<u8> = (0..q.block_bytes()).map(|i| i as u8 ^ 0x5a).collect();
        let mut device = vec![0xee; q.device_block_bytes()];
        q.device_block(&file, &mut device);
        assert_eq!(&device[..file.len()], &file[..], "{q}");
        assert!(device[file.len()..].iter().all(|&x| x == 0), "{q}");
    }
}

#[test]
fn q4_k_and_q5_k_device_blocks_hold_each_units_nibbles_and_scales_together() {
    for q in [QuantType::Q4K, QuantType::Q5K] {
        // d = dmin = 1, so the file's values are `scale * code - min`, small integers.
        let mut file: Vec<u8> = (0..q.block_bytes() as u32)
            .map(|i| (i.wrapping_mul(2_246_822_519) >> 11) as u8)
            .collect();
        file[0..2].copy_from_slice(&h(1.0));
        file[2..4].copy_from_slice(&h(1.0));
        let want = decode(q, &file);
        let mut device = vec![0xee; q.device_block_bytes()];
        q.device_block(&file, &mut device);
        let word = |at: usize| u32::from_le_bytes(device[at..at + 4].try_into().unwrap());
        let qs = if q == QuantType::Q5K { 48 } else { 16 };
        for (v, &want) in want.iter().enumerate() {
            let (s, l) = (v / 32, v % 32);
            let scale = (word(4) >> (4 * s)) & 0xf | ((word(12) >> (2 * s)) & 3) << 4;
            let min = (word(8) >> (4 * s)) & 0xf | ((word(12) >> (16 + 2 * s)) & 3) << 4;
            let mut code = u32::from(device[qs + 16 * s + l % 16] >> (4 * (l / 16))) & 0xf;
            if q == QuantType::Q5K {
                code += 16 * u32::from((device[16 + l] >> s) & 1);
            }
            assert_eq!((scale * code) as f32 - min as f32, want, "{q} value {v}");
        }
        assert_eq!(&device[..4], &file[..4], "{q}");
    }
}

#[test]
fn q2_k_and_q3_k_device_blocks_hold_each_units_codes_and_scales_together() {
    for q in [QuantType::Q2K, QuantType::Q3K] {
        // Every f16 scale 1, so the file's values are small integers.
        let mut file: Vec<u8> = (0..q.block_bytes() as u32)
            .map(|i| (i.wrapping_mul(3_266_489_917) >> 9) as u8)
            .collect();
        let halves: &[usize] = if q == QuantType::Q2K { &[80, 82] } else { &[108] };
        for &at in halves {
            file[at..at + 2].copy_from_slice(&h(1.0));
        }
        let want = decode(q, &file);
        let mut device = vec![0xee; q.device_block_bytes()];
        q.device_block(&file, &mut device);
        let word = |at: usize| u32::from_le_bytes(device[at..at + 4].try_into().unwrap());
        for (v, &want) in want.iter().enumerate() {
            let (s, l) = (v / 32, v % 32);
            let first = if q == QuantType::Q2K { 16 } else { 0 };
            let code = i32::from((device[first + 8 * s + l % 8] >> (2 * (l / 8))) & 3);
            let got = if q == QuantType::Q2K {
                let sc = i32::from(device[2 * s + l / 16]);
                (sc & 0xf) * code - (sc >> 4)
            } else {
                let i = 2 * s + l / 16;
                let scale = (word(96 + 4 * (i / 8)) >> (4 * (i % 8))) & 0xf | ((word(104) >> (2 * i)) & 3) << 4;
                let high = i32::from((device[64 + 4 * s + l % 4] >> (l / 4)) & 1);
                (scale as i32 - 32) * (code - 4 + 4 * high)
            };
            assert_eq!(got as f32, want, "{q} value {v}");
        }
    }
}
