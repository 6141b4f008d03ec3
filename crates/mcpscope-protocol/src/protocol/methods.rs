//! MCP's method names, in one place: code matches on these constants, never
//! on string copies.

pub const INITIALIZE: &str = "initialize";
pub const INITIALIZED: &str = "notifications/initialized";
pub const PING: &str = "ping";
pub const SERVER_DISCOVER: &str = "server/discover";

pub const TOOLS_LIST: &str = "tools/list";
pub const TOOLS_CALL: &str = "tools/call";
pub const PROMPTS_LIST: &str = "prompts/list";
pub const PROMPTS_GET: &str = "prompts/get";
pub const RESOURCES_LIST: &str = "resources/list";
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
pub const RESOURCES_READ: &str = "resources/read";
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
pub const COMPLETION_COMPLETE: &str = "completion/complete";
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";

pub const ROOTS_LIST: &str = "roots/list";
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
pub const ELICITATION_CREATE: &str = "elicitation/create";

pub const TASKS_GET: &str = "tasks/get";
pub const TASKS_RESULT: &str = "tasks/result";
pub const TASKS_CANCEL: &str = "tasks/cancel";
pub const TASKS_LIST: &str = "tasks/list";
pub const TASKS_UPDATE: &str = "tasks/update";

pub const CANCELLED: &str = "notifications/cancelled";
pub const PROGRESS: &str = "notifications/progress";
pub const MESSAGE: &str = "notifications/message";
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";

/// The lists a server can advertise, by the capability that advertises them.
pub const ADVERTISED_LISTS: [(&str, &str); 3] = [
    ("tools", TOOLS_LIST),
    ("prompts", PROMPTS_LIST),
    ("resources", RESOURCES_LIST),
];

/// Every list method whose changes a server announces.
pub const LISTS: [&str; 3] = [TOOLS_LIST, PROMPTS_LIST, RESOURCES_LIST];

/// The list a `…/list_changed` notification is about.
pub fn list_of_change(notification: &str) -> Option<&'static str> {
    match notification {
        TOOLS_LIST_CHANGED => Some(TOOLS_LIST),
        PROMPTS_LIST_CHANGED => Some(PROMPTS_LIST),
        RESOURCES_LIST_CHANGED => Some(RESOURCES_LIST),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_changes_name_their_lists() {
        for list in LISTS {
            let n = format!("notifications/{list}_changed");
            assert_eq!(list_of_change(&n), Some(list), "{n}");
        }
        assert_eq!(list_of_change(ROOTS_LIST_CHANGED), None);
    }
}
