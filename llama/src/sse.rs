//! An incremental Server-Sent Events decoder for chat-completion streams.
//!
//! Bytes arrive in arbitrary pieces; [`Decoder::push`] returns what became complete. `data:` lines of one
//! event are joined with `\n` and dispatched at the blank line that ends the event (or at end of input,
//! [`Decoder::finish`]). Comment lines (`:`), `event:`, `id:` and `retry:` are skipped. A line that is no
//! SSE field at all (an HTML page, a bare JSON line) comes back as [`Item::Other`] so the caller can say
//! what the server really sent. Lines are capped at [`MAX_LINE_BYTES`].

/// Longest line accepted; a longer one is reported as [`Item::TooLong`] and skipped.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// One decoded thing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// The data of one event (`[DONE]` included, verbatim).
    Data(String),
    /// A non-blank line that is not an SSE field.
    Other(String),
    /// A line longer than [`MAX_LINE_BYTES`] was dropped.
    TooLong,
}

/// The decoder state: the unfinished line and the data lines of the current event.
#[derive(Debug, Default)]
pub struct Decoder {
    line: Vec<u8>,
    overflow: bool,
    data: Vec<String>,
}

impl Decoder {
    /// A fresh decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the items they completed, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Item> {
        let mut out = Vec::new();
        for &b in bytes {
            if b == b'\n' {
                let line = std::mem::take(&mut self.line);
                if std::mem::take(&mut self.overflow) {
                    out.push(Item::TooLong);
                    continue;
                }
                self.line_done(&line, &mut out);
            } else if self.line.len() < MAX_LINE_BYTES {
                self.line.push(b);
            } else {
                self.overflow = true;
            }
        }
        out
    }

    /// Ends the input: a last line without `\n` and an event without its blank line still count.
    pub fn finish(&mut self) -> Vec<Item> {
        let mut out = Vec::new();
        let line = std::mem::take(&mut self.line);
        if std::mem::take(&mut self.overflow) {
            out.push(Item::TooLong);
        } else if !line.is_empty() {
            self.line_done(&line, &mut out);
        }
        self.dispatch(&mut out);
        out
    }

    fn line_done(&mut self, raw: &[u8], out: &mut Vec<Item>) {
        let text = String::from_utf8_lossy(raw);
        let line = text.strip_suffix('\r').unwrap_or(&text);
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => self.data.push(value.to_owned()),
            "event" | "id" | "retry" => {}
            _ => out.push(Item::Other(line.to_owned())),
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Item>) {
        if !self.data.is_empty() {
            out.push(Item::Data(std::mem::take(&mut self.data).join("\n")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(s: &str) -> Item {
        Item::Data(s.to_owned())
    }

    #[test]
    fn events_split_across_pieces_and_crlf_decode_whole() {
        let mut d = Decoder::new();
        assert!(d.push(b"data: {\"a\"").is_empty());
        assert_eq!(d.push(b":1}\r\n\r\ndata:[DONE]\n"), vec![data("{\"a\":1}")]);
        assert_eq!(d.push(b"\n"), vec![data("[DONE]")]);
    }

    #[test]
    fn comments_and_named_events_are_skipped_and_multi_line_data_is_joined() {
        let mut d = Decoder::new();
        let items = d.push(b": ping\nevent: message\nid: 7\ndata: a\ndata: b\n\n");
        assert_eq!(items, vec![data("a\nb")]);
    }

    #[test]
    fn html_and_unterminated_input_are_reported() {
        let mut d = Decoder::new();
        let items = d.push(b"<!doctype html>\n<title>Nope</title>\n");
        assert_eq!(
            items,
            vec![
                Item::Other("<!doctype html>".into()),
                Item::Other("<title>Nope</title>".into())
            ]
        );
        assert!(d.push(b"data: tail").is_empty());
        assert_eq!(d.finish(), vec![data("tail")]);
        assert!(d.finish().is_empty());
    }

    #[test]
    fn an_endless_line_is_dropped_not_buffered() {
        let mut d = Decoder::new();
        let big = vec![b'x'; MAX_LINE_BYTES + 10];
        assert!(d.push(&big).is_empty());
        assert!(d.line.len() <= MAX_LINE_BYTES);
        assert_eq!(d.push(b"\ndata: ok\n\n"), vec![Item::TooLong, data("ok")]);
    }
}
