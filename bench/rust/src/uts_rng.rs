//! SHA-1 (FIPS 180-1) for UTS's splittable random numbers, as in
//! bench/common/sha1.hpp: a node is named by a 20-byte digest, a child by
//! SHA-1(parent || index as 4 big-endian bytes). Messages are shorter than
//! 56 bytes, so one padded block suffices.

pub type Digest = [u8; 20];

fn one_block(msg: &[u8]) -> Digest {
    let mut block = [0u8; 64];
    block[..msg.len()].copy_from_slice(msg);
    block[msg.len()] = 0x80;
    let bits = (msg.len() as u64) * 8;
    block[56..].copy_from_slice(&bits.to_be_bytes());
    let mut w = [0u32; 80];
    for i in 0..16 {
        w[i] = u32::from_be_bytes([block[4 * i], block[4 * i + 1], block[4 * i + 2], block[4 * i + 3]]);
    }
    for i in 16..80 {
        w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
    }
    let mut h: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
    let (mut a, mut b, mut c, mut d, mut e) = (h[0], h[1], h[2], h[3], h[4]);
    for (i, wi) in w.iter().enumerate() {
        let (f, k) = if i < 20 {
            ((b & c) | (!b & d), 0x5A827999)
        } else if i < 40 {
            (b ^ c ^ d, 0x6ED9EBA1)
        } else if i < 60 {
            ((b & c) | (b & d) | (c & d), 0x8F1BBCDC)
        } else {
            (b ^ c ^ d, 0xCA62C1D6)
        };
        let t = a.rotate_left(5).wrapping_add(f).wrapping_add(e).wrapping_add(k).wrapping_add(*wi);
        e = d;
        d = c;
        c = b.rotate_left(30);
        b = a;
        a = t;
    }
    h[0] = h[0].wrapping_add(a);
    h[1] = h[1].wrapping_add(b);
    h[2] = h[2].wrapping_add(c);
    h[3] = h[3].wrapping_add(d);
    h[4] = h[4].wrapping_add(e);
    let mut out = [0u8; 20];
    for i in 0..5 {
        out[4 * i..4 * i + 4].copy_from_slice(&h[i].to_be_bytes());
    }
    out
}

/// UTS's rng_init: the digest of 16 zero bytes and the seed.
pub fn root_state(seed: u32) -> Digest {
    let mut msg = [0u8; 20];
    msg[16..].copy_from_slice(&seed.to_be_bytes());
    one_block(&msg)
}

/// UTS's rng_spawn: the digest of the parent's digest and the child's index.
pub fn child_state(parent: &Digest, index: u32) -> Digest {
    let mut msg = [0u8; 24];
    msg[..20].copy_from_slice(parent);
    msg[20..].copy_from_slice(&index.to_be_bytes());
    one_block(&msg)
}

/// UTS's rng_rand scaled to [0, 1).
pub fn probability(s: &Digest) -> f64 {
    let v = u32::from_be_bytes([s[16], s[17], s[18], s[19]]) & 0x7fff_ffff;
    v as f64 / 2147483648.0
}
