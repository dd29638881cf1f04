//! UUIDs the providers send: random version 4 for the `jti` of a signed assertion or proof
//! (from the system's secure random source), version 7 for Codex's request ids.

use ring::rand::{SecureRandom, SystemRandom};

/// 16 bytes in the 8-4-4-4-12 hex form.
pub(crate) fn text(b: [u8; 16]) -> String {
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A random version-4 UUID; `what` names its use in the error when the system has no
/// random bytes to give.
pub(crate) fn v4(rng: &SystemRandom, what: &str) -> Result<String, String> {
    let mut b = [0u8; 16];
    rng.fill(&mut b)
        .map_err(|_| format!("no random bytes for the {what}"))?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    Ok(text(b))
}

/// A fresh version-7 UUID: 48 bits of Unix milliseconds, the version, then random bits.
pub(crate) fn v7() -> String {
    let mut random = [0u8; 10];
    if SystemRandom::new().fill(&mut random).is_err() {
        use crate::environment::IdSource as _;
        let ids = crate::environment::FastIds::from_os();
        random[..8].copy_from_slice(&ids.next_u64().to_be_bytes());
        random[8..].copy_from_slice(&ids.next_u64().to_be_bytes()[..2]);
    }
    let ms = crate::clock::now_ms();
    let mut b = [0u8; 16];
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    b[6] = 0x70 | (random[0] & 0x0f);
    b[7] = random[1];
    b[8] = 0x80 | (random[2] & 0x3f);
    b[9..].copy_from_slice(&random[3..]);
    text(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_4_ids_are_random_and_marked() {
        let id = v4(&SystemRandom::new(), "test").unwrap();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(id, v4(&SystemRandom::new(), "test").unwrap());
    }

    #[test]
    fn version_7_ids_hold_the_version_the_variant_and_the_time() {
        let id = v7();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "7");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"), "{id}");
        let ms = u64::from_str_radix(&id[..8], 16).unwrap() << 16
            | u64::from_str_radix(&id[9..13], 16).unwrap();
        assert!(ms.abs_diff(crate::clock::now_ms()) < 60_000);
        assert_ne!(v7(), v7());
    }
}
