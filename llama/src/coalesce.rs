//! Coalescing token deltas into readable chunks: one event per line, or per [`MAX_CHARS`], or per
//! [`MAX_AGE`] of waiting, never one event per token.

use std::time::{Duration, Instant};

/// Most characters held before a chunk is emitted without waiting for a newline.
pub const MAX_CHARS: usize = 200;
/// Longest a started chunk waits for more text before it is emitted anyway.
pub const MAX_AGE: Duration = Duration::from_millis(200);

/// Buffers streamed text; the caller passes the clock so the rules are testable without sleeping.
#[derive(Debug)]
pub struct Coalescer {
    buf: String,
    since: Option<Instant>,
    max_chars: usize,
    max_age: Duration,
}

impl Default for Coalescer {
    fn default() -> Self {
        Self::new(MAX_CHARS, MAX_AGE)
    }
}

impl Coalescer {
    /// A coalescer with explicit limits.
    pub fn new(max_chars: usize, max_age: Duration) -> Self {
        Self {
            buf: String::new(),
            since: None,
            max_chars,
            max_age,
        }
    }

    /// Adds a delta received at `now`; returns a chunk when one is complete: everything up to the last
    /// newline, or the whole buffer once it is long or old enough.
    pub fn push(&mut self, delta: &str, now: Instant) -> Option<String> {
        if delta.is_empty() {
            return self.poll(now);
        }
        if self.buf.is_empty() {
            self.since = Some(now);
        }
        self.buf.push_str(delta);
        if self.buf.chars().count() >= self.max_chars {
            return self.flush();
        }
        if let Some(i) = self.buf.rfind('\n') {
            let rest = self.buf.split_off(i + 1);
            let chunk = std::mem::replace(&mut self.buf, rest);
            self.since = (!self.buf.is_empty()).then_some(now);
            return Some(chunk);
        }
        self.poll(now)
    }

    /// The buffer, when it has waited [`Coalescer::deadline`] out.
    pub fn poll(&mut self, now: Instant) -> Option<String> {
        match self.deadline() {
            Some(deadline) if now >= deadline => self.flush(),
            _ => None,
        }
    }

    /// When the pending text must be emitted, if there is any.
    pub fn deadline(&self) -> Option<Instant> {
        self.since.map(|since| since + self.max_age)
    }

    /// Everything pending, now (end of a turn or of the stream).
    pub fn flush(&mut self) -> Option<String> {
        self.since = None;
        (!self.buf.is_empty()).then(|| std::mem::take(&mut self.buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_gather_until_a_newline_and_the_rest_waits() {
        let t0 = Instant::now();
        let mut c = Coalescer::default();
        assert_eq!(c.push("In", t0), None);
        assert_eq!(c.push(" the", t0), None);
        assert_eq!(c.push(" end.\nNext", t0), Some("In the end.\n".into()));
        assert_eq!(c.flush(), Some("Next".into()));
        assert_eq!(c.flush(), None);
    }

    #[test]
    fn long_or_old_text_is_emitted_without_a_newline() {
        let t0 = Instant::now();
        let mut c = Coalescer::new(10, Duration::from_millis(200));
        assert_eq!(c.push("12345", t0), None);
        assert_eq!(c.push("67890ab", t0), Some("1234567890ab".into()));
        assert_eq!(c.push("x", t0), None);
        assert_eq!(c.deadline(), Some(t0 + Duration::from_millis(200)));
        assert_eq!(c.poll(t0 + Duration::from_millis(199)), None);
        assert_eq!(c.poll(t0 + Duration::from_millis(200)), Some("x".into()));
        assert_eq!(c.deadline(), None);
    }

    #[test]
    fn a_stream_of_single_tokens_makes_few_events() {
        let t0 = Instant::now();
        let mut c = Coalescer::default();
        let words: Vec<String> = (0..300).map(|i| format!(" w{i}")).collect();
        let mut chunks: Vec<String> = words.iter().filter_map(|w| c.push(w, t0)).collect();
        chunks.extend(c.flush());
        assert!(chunks.len() < 20, "{} chunks for 300 tokens", chunks.len());
        assert_eq!(chunks.concat(), words.concat());
    }
}
