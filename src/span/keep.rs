//! What a buffered span keeps of its attributes and scope: the service
//! keeps only what extraction, binding, rules and the judges read (an LLM
//! span's prompt, say, is never looked at), so a buffered span costs little
//! more than what is evaluated.
//!
//! Three kinds of keys are kept:
//! - exact keys, each with a small id for the records (fixed at start-up,
//!   so no table of keys travels with a trace);
//! - flattened model messages (`llm.output_messages.0.message.tool_calls.1.…`,
//!   `gen_ai.prompt.3.content`): the keys under a message prefix, which
//!   carry indexes and so are kept by name. Of those, a message's role, ids
//!   and tool calls are kept, and its text only when it is a tool's result:
//!   the conversation's prompts are never read;
//! - the instrumentation scope, as a small id, when it is one extraction
//!   recognises a library by.
//!
//! Of a log record that belongs to a span (an event), the same attributes
//! are kept, and its body when the event is one extraction reads
//! ([`KeepAttributes::with_event_bodies`]).

use std::sync::Arc;

/// How a kept attribute's key is written in a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRef<'a> {
    /// An exact key, by its id.
    Id(u32),
    /// A flattened message key, by name, with what its field is to
    /// [`KeepAttributes::retain_message_fields`].
    Named(&'a str, Field),
}

/// A flattened message field, as far as keeping it goes (told once, when
/// the key is classified, so the filter need not take keys apart again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Kept whatever the message (ids, tool calls, a tool's schema).
    Kept,
    /// The message's role: kept, and marks a tool's result by its value.
    Role,
    /// A `tool_call_id`: kept, and marks a tool's result.
    CallId,
    /// The message's text: kept only for a tool's result.
    Text,
}

/// A flattened message attribute's key, taken apart:
/// `llm.input_messages.3.message.content` is list `llm.input_messages.`,
/// message `3`, field `content` (a leading `message.` dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageKey<'a> {
    pub list: &'a str,
    pub index: &'a str,
    pub field: &'a str,
}

impl<'a> MessageKey<'a> {
    /// Whether the field is the message's text, kept only for a tool's result.
    fn is_text(&self) -> bool {
        self.field == "content" || self.field.starts_with("contents.")
    }

    /// Whether the field is kept whatever the message: its role, the ids
    /// and name of a tool result, its tool calls (and a declared tool's
    /// schema, `llm.tools.{n}.tool.json_schema`).
    fn always(&self) -> bool {
        matches!(
            self.field,
            "role" | "tool_call_id" | "name" | "tool.json_schema"
        ) || self.field.starts_with("tool_calls.")
    }
}

#[derive(Debug, Clone, Default)]
pub struct KeepAttributes {
    /// Id → key.
    names: Vec<Arc<str>>,
    /// Key → id, looked up once per attribute on the receive path, hence
    /// foldhash (the set is fixed at start-up; clients only look up).
    ids: std::collections::HashMap<Arc<str>, u32, foldhash::fast::RandomState>,
    /// Prefixes of flattened model messages, each ending in `.`.
    messages: Vec<Arc<str>>,
    /// Instrumentation scope names (a name, or a prefix ending in `*`): a
    /// span of one of them keeps its position here, plus one.
    scopes: Vec<Arc<str>>,
    /// The events (by name) whose body is kept, under [`EVENT_BODY`].
    event_bodies: Vec<Arc<str>>,
}

/// The key an event's body is kept under, among its attributes.
pub const EVENT_BODY: &str = "toolscore.event.body";

impl KeepAttributes {
    pub fn only<I: IntoIterator<Item = String>>(keys: I) -> KeepAttributes {
        let mut keep = KeepAttributes::default();
        for key in keys {
            let key: Arc<str> = Arc::from(key);
            if !keep.ids.contains_key(&key)
                && let Ok(id) = u32::try_from(keep.names.len())
            {
                keep.ids.insert(key.clone(), id);
                keep.names.push(key);
            }
        }
        keep
    }

    /// Keeps flattened model messages under these prefixes too (each ends
    /// with `.`: `llm.input_messages.`; none has a `.` followed by a digit,
    /// which would end it early: such a prefix is not kept).
    pub fn with_messages<I: IntoIterator<Item = String>>(mut self, prefixes: I) -> KeepAttributes {
        self.messages = prefixes
            .into_iter()
            .filter(|p| {
                let b = p.as_bytes();
                !b.windows(2).any(|w| w[0] == b'.' && w[1].is_ascii_digit())
            })
            .map(Arc::from)
            .collect();
        self
    }

    /// Recognises these instrumentation scopes (names, or prefixes ending
    /// in `*`).
    pub fn with_scopes<I: IntoIterator<Item = String>>(mut self, scopes: I) -> KeepAttributes {
        self.scopes = scopes.into_iter().map(Arc::from).collect();
        self
    }

    /// Keeps the body of the events with these names (under
    /// [`EVENT_BODY`]).
    pub fn with_event_bodies<I: IntoIterator<Item = String>>(mut self, names: I) -> KeepAttributes {
        self.event_bodies = names.into_iter().map(Arc::from).collect();
        let key: Arc<str> = Arc::from(EVENT_BODY);
        if !self.event_bodies.is_empty()
            && !self.ids.contains_key(&key)
            && let Ok(id) = u32::try_from(self.names.len())
        {
            self.ids.insert(key.clone(), id);
            self.names.push(key);
        }
        self
    }

    /// Whether the body of an event with this name is kept.
    pub fn keeps_body(&self, event: &str) -> bool {
        self.event_bodies.iter().any(|n| **n == *event)
    }

    /// The key's id if the attribute is kept by its exact key.
    pub fn id(&self, key: &str) -> Option<u32> {
        self.ids.get(key).copied()
    }

    /// The key with this id.
    pub fn name(&self, id: u64) -> Option<&str> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.names.get(i))
            .map(|k| &**k)
    }

    /// How a key is kept, if it is: by id, or by name as a flattened
    /// message field that is kept always or may be (a message's text, which
    /// [`KeepAttributes::retain_message_fields`] then decides on).
    #[inline]
    pub fn classify<'k>(&self, key: &'k str) -> Option<KeyRef<'k>> {
        if let Some(id) = self.id(key) {
            return Some(KeyRef::Id(id));
        }
        let m = self.message_key(key)?;
        let field = match m.field {
            "role" => Field::Role,
            "tool_call_id" => Field::CallId,
            _ if m.always() => Field::Kept,
            _ if m.is_text() => Field::Text,
            _ => return None,
        };
        Some(KeyRef::Named(key, field))
    }

    /// `key` taken apart, when it is under a message prefix. A message key
    /// is `<list><index>.<field>`, and no list has a `.` followed by a
    /// digit, so its list ends at the key's first one: found in one pass
    /// over the key, then compared whole (most keys have no such `.`, and
    /// cost no comparison at all).
    pub fn message_key<'k>(&self, key: &'k str) -> Option<MessageKey<'k>> {
        if self.messages.is_empty() {
            return None;
        }
        // Keys are short: a plain scan beats a vectorised search's set-up.
        let at = key
            .as_bytes()
            .windows(2)
            .position(|w| w[0] == b'.' && w[1].is_ascii_digit())?
            + 1;
        let (list, rest) = key.split_at_checked(at)?;
        if !self.messages.iter().any(|p| **p == *list) {
            return None;
        }
        let end = rest.bytes().position(|c| !c.is_ascii_digit())?;
        if rest.as_bytes().get(end) != Some(&b'.') {
            return None;
        }
        let (index, field) = (&rest[..end], &rest[end + 1..]);
        let field = field.strip_prefix("message.").unwrap_or(field);
        Some(MessageKey { list, index, field })
    }

    /// The scope's small id (0: not one extraction recognises).
    pub fn scope_id(&self, scope: &str) -> u32 {
        self.scopes
            .iter()
            .position(|s| match s.strip_suffix('*') {
                Some(prefix) => scope.starts_with(prefix),
                None => scope == &**s,
            })
            .and_then(|i| u32::try_from(i + 1).ok())
            .unwrap_or(0)
    }

    /// The scope pattern with this id.
    pub fn scope_name(&self, id: u32) -> Option<&str> {
        let i = usize::try_from(id).ok()?.checked_sub(1)?;
        self.scopes.get(i).map(|s| &**s)
    }

    /// Drops the flattened message text a span does not keep: a
    /// message's text stays only when the message is a tool's result (its
    /// `role` is `tool`, or it has a `tool_call_id`). `kept` is what
    /// [`KeepAttributes::classify`] kept of a span, with each value;
    /// `value_of` gives a value's text when it is a string. Most spans have
    /// no message text, and most messages are no tool's result: only then
    /// are keys taken apart again, to match text to its message.
    pub fn retain_message_fields<'k, T>(
        &self,
        kept: &mut Vec<(KeyRef<'k>, T)>,
        value_of: impl Fn(&T) -> Option<&str>,
    ) {
        let (mut text, mut marked) = (false, false);
        for (k, v) in kept.iter() {
            match k {
                KeyRef::Named(_, Field::Text) => text = true,
                KeyRef::Named(_, Field::CallId) => marked = true,
                KeyRef::Named(_, Field::Role) => marked |= marks_tool_result("role", value_of(v)),
                _ => {}
            }
        }
        if !text {
            return;
        }
        if !marked {
            // No message is a tool's result: every text goes.
            kept.retain(|(k, _)| !matches!(k, KeyRef::Named(_, Field::Text)));
            return;
        }
        // The (list, index) of each message marked as a tool's result.
        let mut results: Vec<(&'k str, &'k str)> = Vec::new();
        for (k, v) in kept.iter() {
            let KeyRef::Named(name, Field::Role | Field::CallId) = *k else {
                continue;
            };
            if let Some(m) = self.message_key(name)
                && marks_tool_result(m.field, value_of(v))
            {
                results.push((m.list, m.index));
            }
        }
        kept.retain(|(k, _)| match *k {
            KeyRef::Named(name, Field::Text) => self
                .message_key(name)
                .is_some_and(|m| results.contains(&(m.list, m.index))),
            _ => true,
        });
    }
}

/// Whether a flattened message attribute marks its message as a tool's
/// result: a `role` of `tool` (or `function`, older OpenAI), or a
/// `tool_call_id` of any value.
pub fn marks_tool_result(field: &str, value: Option<&str>) -> bool {
    match field {
        "tool_call_id" => true,
        "role" => matches!(value, Some("tool" | "function" | "tool-response")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep() -> KeepAttributes {
        KeepAttributes::only(["tool.name".to_owned()])
            .with_messages([
                "llm.input_messages.".to_owned(),
                "gen_ai.prompt.".to_owned(),
            ])
            .with_scopes([
                "openinference.instrumentation.langchain".to_owned(),
                "@arizeai/*".to_owned(),
            ])
    }

    #[test]
    fn keys_are_kept_by_id_or_as_messages() {
        let k = keep();
        assert_eq!(k.classify("tool.name"), Some(KeyRef::Id(0)));
        assert_eq!(
            k.classify("llm.input_messages.2.message.content"),
            Some(KeyRef::Named(
                "llm.input_messages.2.message.content",
                Field::Text
            ))
        );
        assert_eq!(k.classify("llm.input_messages.x.message.content"), None);
        assert_eq!(k.classify("input.value"), None);
        let m = k.message_key("gen_ai.prompt.10.tool_calls.0.name").unwrap();
        assert_eq!(
            (m.list, m.index, m.field),
            ("gen_ai.prompt.", "10", "tool_calls.0.name")
        );
    }

    #[test]
    fn an_exact_key_is_no_message_prefix_of_the_same_name() {
        // `gen_ai.prompt`: a JSON message list (older GenAI span events);
        // `gen_ai.prompt.{i}.…`: OpenLLMetry's flattened messages.
        let k = KeepAttributes::only(["gen_ai.prompt".to_owned()])
            .with_messages(["gen_ai.prompt.".to_owned()]);
        assert_eq!(k.classify("gen_ai.prompt"), Some(KeyRef::Id(0)));
        assert_eq!(
            k.classify("gen_ai.prompt.0.role"),
            Some(KeyRef::Named("gen_ai.prompt.0.role", Field::Role))
        );
        assert_eq!(k.classify("gen_ai.prompt."), None);
        assert_eq!(k.classify("gen_ai.prompts"), None);
    }

    #[test]
    fn a_message_key_is_its_list_index_and_field_or_nothing() {
        let k = keep();
        let m = k.message_key("llm.input_messages.12.message.role").unwrap();
        assert_eq!(
            (m.list, m.index, m.field),
            ("llm.input_messages.", "12", "role")
        );
        for not in [
            "llm.input_messages.",
            "llm.input_messages.3",
            "llm.input_messages.3x.role",
            "llm.input_messages.x.3.role",
            "llm.output_messages.0.role",
            "gen_ai.system",
            "v1.2.role",
        ] {
            assert_eq!(k.message_key(not), None, "{not}");
        }
        // A prefix that would end early (a `.` before a digit) is not kept.
        let odd = KeepAttributes::default().with_messages(["a.1b.".to_owned(), "c.".to_owned()]);
        assert_eq!(odd.message_key("a.1b.0.role"), None);
        assert!(odd.message_key("c.0.role").is_some());
    }

    #[test]
    fn only_a_tool_results_text_is_kept() {
        let k = keep();
        let attrs = [
            ("llm.input_messages.0.message.role", "user"),
            ("llm.input_messages.0.message.content", "a prompt"),
            ("llm.input_messages.1.message.role", "tool"),
            ("llm.input_messages.1.message.content", "a result"),
            ("llm.input_messages.3.message.tool_call_id", "call_1"),
            ("llm.input_messages.3.message.content", "another result"),
            (
                "llm.input_messages.2.message.tool_calls.0.tool_call.function.name",
                "f",
            ),
            (
                "llm.input_messages.2.message.contents.0.message_content.text",
                "text",
            ),
            ("gen_ai.prompt.0.content", "a prompt"),
            ("gen_ai.prompt.0.finish_reason", "stop"),
            ("gen_ai.prompt.1.role", "function"),
            ("gen_ai.prompt.1.content", "an older result"),
        ];
        let mut kept: Vec<(KeyRef<'_>, &str)> = attrs
            .iter()
            .filter_map(|(key, v)| Some((k.classify(key)?, *v)))
            .collect();
        k.retain_message_fields(&mut kept, |v| Some(*v));
        let kept: Vec<&str> = kept
            .iter()
            .map(|(key, _)| match key {
                KeyRef::Named(n, _) => *n,
                KeyRef::Id(_) => "",
            })
            .collect();
        assert_eq!(
            kept,
            [
                "llm.input_messages.0.message.role",
                "llm.input_messages.1.message.role",
                "llm.input_messages.1.message.content",
                "llm.input_messages.3.message.tool_call_id",
                "llm.input_messages.3.message.content",
                "llm.input_messages.2.message.tool_calls.0.tool_call.function.name",
                "gen_ai.prompt.1.role",
                "gen_ai.prompt.1.content",
            ]
        );
        // Without a tool result, nothing is dropped but the text.
        let mut prompts = vec![
            (k.classify("gen_ai.prompt.0.role").unwrap(), "user"),
            (k.classify("gen_ai.prompt.0.content").unwrap(), "hello"),
        ];
        k.retain_message_fields(&mut prompts, |v| Some(*v));
        assert_eq!(prompts.len(), 1);
    }

    #[test]
    fn scopes_match_by_name_or_prefix() {
        let k = keep();
        assert_eq!(k.scope_id("openinference.instrumentation.langchain"), 1);
        assert_eq!(k.scope_id("openinference.instrumentation.langchainx"), 0);
        assert_eq!(
            k.scope_id("@arizeai/openinference-instrumentation-langchain"),
            2
        );
        assert_eq!(k.scope_name(2), Some("@arizeai/*"));
        assert_eq!(k.scope_name(0), None);
    }
}
