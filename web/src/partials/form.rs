//! Form building blocks: labelled fields with their error messages, the hidden CSRF input and `<option>`
//! lists. Every control gets an id (prefixed per form, since one page can hold two `body` fields),
//! `aria-invalid` when it has errors and `aria-describedby` pointing at them.

use maud::{Markup, html};

use crate::views::{FormErrors, OptionView};

/// The hidden `_csrf` input every signed-in form carries.
pub fn csrf(token: &str) -> Markup {
    html! { input type="hidden" name="_csrf" value=(token); }
}

/// `<option>`s with the selected one marked.
pub fn options(opts: &[OptionView]) -> Markup {
    html! {
        @for o in opts {
            option value=(o.value) selected[o.selected] { (o.label) }
        }
    }
}

/// One form's errors plus an id prefix for its controls.
#[derive(Clone, Copy)]
pub struct Form<'a> {
    /// Prefix for control ids (`new-issue` gives `new-issue-title`).
    pub prefix: &'a str,
    /// The form's errors by field; `"form"` is the whole form.
    pub errors: &'a FormErrors,
}

impl<'a> Form<'a> {
    /// A form whose control ids start with `prefix-`.
    pub fn new(prefix: &'a str, errors: &'a FormErrors) -> Self {
        Self { prefix, errors }
    }

    /// The id of the control for `name`.
    pub fn id(&self, name: &str) -> String {
        format!("{}-{name}", self.prefix)
    }

    /// Whether `name` has messages.
    pub fn invalid(&self, name: &str) -> bool {
        self.errors.get(name).is_some_and(|m| !m.is_empty())
    }

    fn described_by(&self, name: &str) -> Option<String> {
        self.invalid(name)
            .then(|| format!("{}-error", self.id(name)))
    }

    /// The whole-form messages (`errors["form"]`) as an alert, or nothing.
    pub fn form_errors(&self) -> Markup {
        html! {
            @if let Some(msgs) = self.errors.get("form").filter(|m| !m.is_empty()) {
                div.alert.alert-error role="alert" {
                    @for m in msgs { p { (m) } }
                }
            }
        }
    }

    /// How many fields need fixing, said once at the top (each message is next to its own field);
    /// nothing when there are none or when a whole-form message already says what is wrong.
    pub fn error_summary(&self) -> Markup {
        let n = self
            .errors
            .iter()
            .filter(|(field, msgs)| field.as_str() != "form" && !msgs.is_empty())
            .count();
        html! {
            @if n > 0 && !self.errors.contains_key("form") {
                div.alert.alert-error.error-summary role="alert" {
                    p { @if n == 1 { "Fix the highlighted field below." } @else { "Fix the " (n) " highlighted fields below." } }
                }
            }
        }
    }

    /// The messages for one field, or nothing.
    pub fn field_errors(&self, name: &str) -> Markup {
        html! {
            @if let Some(msgs) = self.errors.get(name).filter(|m| !m.is_empty()) {
                div.field-error id={ (self.id(name)) "-error" } {
                    @for m in msgs { p { (m) } }
                }
            }
        }
    }

    /// A labelled field: label, control, optional hint, then the field's errors.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "callers hand over an `html!` temporary built inline; taking `&Markup` would only add `&`s"
    )]
    pub fn field(&self, label: &str, name: &str, hint: Option<&str>, control: Markup) -> Markup {
        html! {
            div.field.has-error[self.invalid(name)] {
                label for=(self.id(name)) { (label) }
                (control)
                @if let Some(h) = hint { p.hint { (h) } }
                (self.field_errors(name))
            }
        }
    }

    /// An `<input>` keeping the typed `value`.
    pub fn input(&self, name: &str, kind: &str, value: &str) -> Markup {
        html! {
            input id=(self.id(name)) name=(name) type=(kind) value=(value)
                aria-invalid=[self.invalid(name).then_some("true")]
                aria-describedby=[self.described_by(name)];
        }
    }

    /// A required `<input>` keeping the typed `value`.
    pub fn required(&self, name: &str, kind: &str, value: &str) -> Markup {
        html! {
            input id=(self.id(name)) name=(name) type=(kind) value=(value) required
                aria-invalid=[self.invalid(name).then_some("true")]
                aria-describedby=[self.described_by(name)];
        }
    }

    /// A `<textarea>` keeping the typed `value`.
    pub fn textarea(&self, name: &str, value: &str, rows: u8) -> Markup {
        self.textarea_with(name, value, rows, None)
    }

    /// A `<textarea>` with, optionally, the `data-mentions` that `mentions.js` completes from.
    pub(crate) fn textarea_with(
        &self,
        name: &str,
        value: &str,
        rows: u8,
        mentions: Option<String>,
    ) -> Markup {
        html! {
            textarea id=(self.id(name)) name=(name) rows=(rows) data-mentions=[mentions]
                aria-invalid=[self.invalid(name).then_some("true")]
                aria-describedby=[self.described_by(name)] { (value) }
        }
    }

    /// A `<select>` over `opts`.
    pub fn select(&self, name: &str, opts: &[OptionView]) -> Markup {
        html! {
            select id=(self.id(name)) name=(name)
                aria-invalid=[self.invalid(name).then_some("true")]
                aria-describedby=[self.described_by(name)] { (options(opts)) }
        }
    }
}
