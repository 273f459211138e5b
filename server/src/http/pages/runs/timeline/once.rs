//! The parts of the fold that show a thing once although several events carry it: streamed deltas
//! grown into one block, and a `command` event folded into the tool call whose output it repeats.
//! Entries of an earlier batch (already on the page) are re-rendered through [`Batch::replaced`] or a
//! re-sent result slot; entries of the current batch are changed in place.

use chrono::{DateTime, Utc};
use muster_web::views::{RunItemKind, RunItemView, ToolResultView};

use super::{Batch, Timeline, long_text};
use crate::domain::{RunEvent, Seq};
use crate::markdown::to_safe_html;

/// A text block still growing.
pub(super) struct OpenText {
    /// The first delta's seq and time: the block's id and timestamp.
    seq: Seq,
    at: DateTime<Utc>,
    thinking: bool,
    text: String,
    /// The block's index in `batch.items` in `generation`.
    index: usize,
    generation: u64,
}

/// A call or result just folded, to which a following `command` event may belong.
pub(super) enum Prev {
    Call { id: String },
    Result(PlacedResult),
}

/// Where a result went, to add its command's exit code there.
pub(super) struct PlacedResult {
    id: String,
    view: ToolResultView,
    /// The call's result slot; `None` for a result whose call is not in the log (an entry of its own).
    slot: Option<String>,
    /// The entry holding the result in `batch.items` (its call's, or its own), in `generation`.
    index: Option<usize>,
    generation: u64,
    seq: Seq,
    at: DateTime<Utc>,
}

impl Timeline {
    /// Puts a result into its call: in this batch's entry, into the slot of an earlier call, or as an
    /// entry of its own when the call is unknown.
    pub(super) fn place_result(
        &mut self,
        id: &str,
        result: ToolResultView,
        e: &RunEvent,
    ) -> Option<RunItemKind> {
        let mut placed = PlacedResult {
            id: id.to_owned(),
            view: result.clone(),
            slot: Some(self.slot_id(id)),
            index: None,
            generation: self.generation,
            seq: e.seq,
            at: e.at,
        };
        if let Some(&index) = self.open_calls.get(id)
            && let Some(RunItemKind::ToolCall { result: slot, .. }) =
                self.batch.items.get_mut(index).map(|i| &mut i.kind)
        {
            *slot = Some(result);
            placed.index = Some(index);
            self.prev = Some(Prev::Result(placed));
            return None;
        }
        if self.known_calls.contains(id) {
            self.batch.results.push((self.slot_id(id), result));
            self.prev = Some(Prev::Result(placed));
            return None;
        }
        placed.slot = None;
        placed.index = Some(self.batch.items.len());
        self.prev = Some(Prev::Result(placed));
        Some(RunItemKind::ToolResult { result })
    }

    /// A `command` event right after a call or result: when it is that call's command, its exit code
    /// goes into the call's block and nothing new is shown (its output is the result's).
    pub(super) fn command_of(
        &mut self,
        prev: Option<Prev>,
        cmd: &str,
        exit_code: Option<i32>,
        output: &str,
    ) -> Option<RunItemKind> {
        let kind = RunItemKind::Command {
            cmd: self.relative(cmd),
            exit_code,
            output: long_text(&self.relative(output)),
        };
        let ran = |calls: &std::collections::HashMap<String, String>, id: &str| {
            calls.get(id).map(String::as_str) == Some(cmd)
        };
        match prev {
            Some(Prev::Call { id }) if ran(&self.call_commands, &id) => {
                self.pending_exits.insert(id, exit_code);
                None
            }
            Some(Prev::Result(r)) if r.slot.is_some() && ran(&self.call_commands, &r.id) => {
                self.add_exit_code(r, exit_code);
                None
            }
            // A result whose call is not in the log: the command (with its output) replaces it.
            Some(Prev::Result(r)) if r.slot.is_none() && r.view.output == long_text(output) => {
                let current = r.generation == self.generation;
                match r.index.and_then(|i| self.batch.items.get_mut(i)) {
                    Some(item) if current => item.kind = kind,
                    _ => self.replace(RunItemView {
                        seq: r.seq,
                        at: r.at,
                        kind,
                    }),
                }
                None
            }
            _ => Some(kind),
        }
    }

    /// Sets the exit code on a placed result: in its call's entry of this batch, or by re-sending the
    /// call's result slot.
    fn add_exit_code(&mut self, r: PlacedResult, exit_code: Option<i32>) {
        if r.generation == self.generation
            && let Some(index) = r.index
            && let Some(RunItemKind::ToolCall {
                result: Some(result),
                ..
            }) = self.batch.items.get_mut(index).map(|i| &mut i.kind)
        {
            result.exit_code = exit_code;
            return;
        }
        let Some(slot) = r.slot else { return };
        let mut view = r.view;
        view.exit_code = exit_code;
        self.batch.results.retain(|(s, _)| *s != slot);
        self.batch.results.push((slot, view));
    }

    /// A streamed delta: appended to the open block of its kind (changed in this batch, or re-rendered
    /// when an earlier batch showed it), or the start of a new block.
    pub(super) fn delta(
        &mut self,
        e: &RunEvent,
        thinking: bool,
        piece: &str,
    ) -> Option<RunItemKind> {
        let open = self.open_text.take().filter(|o| o.thinking == thinking);
        let (open, new) = match open {
            Some(mut open) => {
                open.text.push_str(piece);
                let item = text_item(&open);
                match self.batch.items.get_mut(open.index) {
                    Some(entry) if open.generation == self.generation => *entry = item,
                    _ => self.replace(item),
                }
                (open, None)
            }
            None => {
                let open = OpenText {
                    seq: e.seq,
                    at: e.at,
                    thinking,
                    text: piece.to_owned(),
                    index: self.batch.items.len(),
                    generation: self.generation,
                };
                let kind = text_item(&open).kind;
                (open, Some(kind))
            }
        };
        if !open.thinking {
            self.last_text = Some(open.text.clone());
        }
        self.open_text = Some(open);
        new
    }

    /// Queues an entry of an earlier batch to be re-rendered (once per batch, its latest version).
    fn replace(&mut self, item: RunItemView) {
        let Batch { replaced, .. } = &mut self.batch;
        replaced.retain(|i| i.seq != item.seq);
        replaced.push(item);
    }
}

/// The entry of a (growing) text block.
fn text_item(open: &OpenText) -> RunItemView {
    RunItemView {
        seq: open.seq,
        at: open.at,
        kind: if open.thinking {
            RunItemKind::Thinking {
                text: open.text.clone(),
            }
        } else {
            RunItemKind::Text {
                html: to_safe_html(&open.text),
            }
        },
    }
}

#[cfg(test)]
mod tests;
