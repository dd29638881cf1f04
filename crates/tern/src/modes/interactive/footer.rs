//! The footer under the live rows, as pi's: the working directory, then what the session
//! used (tokens up and down, cache reads and writes, cost when there is one, how full the
//! context window is) with the model and its thinking level on the right.

use std::path::Path;

use tern_ai::ThinkingLevel;
use unicode_width::UnicodeWidthStr;

use crate::terminal_text::{shorten_home, truncate, Style};

/// What the footer shows.
pub struct Footer<'a> {
    /// The working directory.
    pub cwd: &'a Path,
    /// `ready`, or the spinner and `working`.
    pub activity: &'a str,
    /// Session totals.
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub cost: f64,
    /// The context's size in tokens, when known (unknown after a compaction until the next
    /// answer).
    pub context: Option<u64>,
    /// The model's context window, in tokens.
    pub window: u64,
    /// Whether compaction starts by itself near the window.
    pub auto_compaction: bool,
    /// The model's id, whether it reasons, and the thinking level.
    pub model: &'a str,
    pub reasoning: bool,
    pub thinking: ThinkingLevel,
    /// A note for the moment (`aborting…`).
    pub hint: Option<&'a str>,
}

impl Footer<'_> {
    /// The footer's two rows, each at most `width` columns.
    pub fn rows(&self, width: usize) -> [String; 2] {
        let dim = |s: &str| Style::Dim.paint(s);
        let cwd = truncate(&shorten_home(&self.cwd.display().to_string()), width);
        let mut stats = vec![self.activity.to_string()];
        for (mark, n) in [
            ("↑", self.input),
            ("↓", self.output),
            ("R", self.cache_read),
            ("W", self.cache_write),
        ] {
            if n > 0 {
                stats.push(format!("{mark}{}", tokens(n)));
            }
        }
        if self.cost > 0.0 {
            stats.push(format!("${:.3}", self.cost));
        }
        let auto = if self.auto_compaction { " (auto)" } else { "" };
        let (percent, context) = match self.context.filter(|_| self.window > 0) {
            Some(c) => {
                let p = c as f64 * 100.0 / self.window as f64;
                (p, format!("{p:.1}%/{}{auto}", tokens(self.window)))
            }
            None => (0.0, format!("?/{}{auto}", tokens(self.window))),
        };
        let mut left = stats.join(" ");
        if let Some(h) = self.hint {
            left = format!("{left} · {h}");
        }
        let right = match (self.reasoning, self.thinking) {
            (false, _) => self.model.to_string(),
            (true, ThinkingLevel::Off) => format!("{} • thinking off", self.model),
            (true, level) => format!("{} • {}", self.model, level.as_str()),
        };
        // The context share in colour when the window fills up, the rest dim.
        let context_painted = if percent > 90.0 {
            Style::Red.paint(&context)
        } else if percent > 70.0 {
            Style::Yellow.paint(&context)
        } else {
            dim(&context)
        };
        let left_width = left.width() + 1 + context.width();
        let line = if left_width + 2 + right.width() <= width {
            let pad = width - left_width - right.width();
            format!(
                "{} {context_painted}{}",
                dim(&left),
                dim(&format!("{}{right}", " ".repeat(pad)))
            )
        } else {
            dim(&truncate(&format!("{left} {context}"), width))
        };
        [dim(&cwd), line]
    }
}

/// pi's `formatTokens`: 999, 1.2k, 45k, 1.2M, 12M.
pub fn tokens(n: u64) -> String {
    let f = n as f64;
    match n {
        0..=999 => n.to_string(),
        1_000..=9_999 => format!("{:.1}k", f / 1e3),
        10_000..=999_999 => format!("{}k", (f / 1e3).round()),
        1_000_000..=9_999_999 => format!("{:.1}M", f / 1e6),
        _ => format!("{}M", (f / 1e6).round()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal_text::strip_sgr as plain;

    fn footer() -> Footer<'static> {
        Footer {
            cwd: Path::new("/srv/app"),
            activity: "ready",
            input: 1234,
            output: 56,
            cache_read: 0,
            cache_write: 0,
            cost: 0.0,
            context: Some(12_800),
            window: 128_000,
            auto_compaction: true,
            model: "gpt-x",
            reasoning: true,
            thinking: ThinkingLevel::High,
            hint: None,
        }
    }

    #[test]
    fn the_footer_says_what_pis_says() {
        let [cwd, stats] = footer().rows(80);
        assert_eq!(plain(&cwd), "/srv/app");
        let stats = plain(&stats);
        assert!(
            stats.starts_with("ready ↑1.2k ↓56 10.0%/128k (auto)"),
            "{stats}"
        );
        assert!(stats.ends_with("gpt-x • high"), "{stats}");
        assert_eq!(stats.width(), 80, "the model is right-aligned: {stats}");
        // No cost for a free model; the cost with three decimals otherwise.
        assert!(!stats.contains('$'));
        let paid = Footer {
            cost: 0.01234,
            ..footer()
        };
        assert!(plain(&paid.rows(80)[1]).contains("$0.012"));
        // Unknown context, a model without reasoning, a narrow screen.
        let f = Footer {
            context: None,
            reasoning: false,
            ..footer()
        };
        assert!(plain(&f.rows(80)[1]).contains("?/128k"));
        assert!(plain(&f.rows(80)[1]).ends_with("gpt-x"));
        assert!(plain(&footer().rows(20)[1]).width() <= 20);
    }

    #[test]
    fn token_counts_read_as_pis() {
        let shown: Vec<String> = [999, 1_000, 9_949, 45_400, 1_260_000, 12_400_000]
            .into_iter()
            .map(tokens)
            .collect();
        assert_eq!(shown, ["999", "1.0k", "9.9k", "45k", "1.3M", "12M"]);
    }
}
