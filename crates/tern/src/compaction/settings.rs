//! pi's compaction settings (`compaction.enabled`, `compaction.reserveTokens`,
//! `compaction.keepRecentTokens` in `settings.json`; `docs/settings.md`).

/// When compaction runs and how much it keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Automatic compaction (manual `/compact` works either way).
    pub enabled: bool,
    /// Tokens left free: compaction starts when the context exceeds the window minus these.
    pub reserve_tokens: u64,
    /// Tokens of the newest messages kept as they are.
    pub keep_recent_tokens: u64,
}

impl Default for Settings {
    /// pi's defaults: enabled, 16,384 reserved, 20,000 kept.
    fn default() -> Self {
        Settings {
            enabled: true,
            reserve_tokens: 16384,
            keep_recent_tokens: 20000,
        }
    }
}

impl Settings {
    /// pi's defaults with the command line's `--compaction-*` / `--no-auto-compaction`.
    pub fn from_args(args: &crate::cli::Args) -> Self {
        let d = Settings::default();
        Settings {
            enabled: !args.no_auto_compaction,
            reserve_tokens: args.compaction_reserve_tokens.unwrap_or(d.reserve_tokens),
            keep_recent_tokens: args
                .compaction_keep_recent_tokens
                .unwrap_or(d.keep_recent_tokens),
        }
    }

    /// Whether a context of `tokens` in a window of `window` should compact (pi's
    /// `shouldCompact`).
    pub fn should_compact(&self, tokens: u64, window: u64) -> bool {
        self.enabled && tokens as i128 > window as i128 - self.reserve_tokens as i128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_the_window_minus_the_reserve() {
        let s = Settings::default();
        assert!(s.should_compact(111_617, 128_000));
        assert!(!s.should_compact(111_616, 128_000));
        let off = Settings {
            enabled: false,
            ..s
        };
        assert!(!off.should_compact(200_000, 128_000));
    }
}
