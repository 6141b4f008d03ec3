//! Which scopes to ask for (MCP 2025-11-25 / 2026-07-28 "Scope Selection
//! Strategy", "Step-Up Authorization Flow", "Refresh Tokens").

/// The scopes of a first authorization: the challenge's `scope` (it is
/// authoritative for the request that failed), else every scope the
/// resource metadata lists, else none (the parameter is omitted). Then
/// `offline_access`, when a refresh token is wanted and the authorization
/// server itself lists that scope, never otherwise.
pub fn initial(
    challenged: Option<&[String]>,
    resource_scopes: Option<&[String]>,
    server_scopes: Option<&[String]>,
    want_refresh: bool,
) -> Option<Vec<String>> {
    let mut s: Vec<String> = challenged
        .filter(|c| !c.is_empty())
        .or(resource_scopes.filter(|r| !r.is_empty()))
        .map(<[String]>::to_vec)
        .unwrap_or_default();
    dedup(&mut s);
    add_offline_access(&mut s, server_scopes, want_refresh);
    (!s.is_empty()).then_some(s)
}

fn dedup(s: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    s.retain(|x| seen.insert(x.clone()));
}

fn add_offline_access(s: &mut Vec<String>, server_scopes: Option<&[String]>, want_refresh: bool) {
    const OFFLINE: &str = "offline_access";
    if want_refresh
        && !s.is_empty()
        && !s.iter().any(|x| x == OFFLINE)
        && server_scopes.is_some_and(|ss| ss.iter().any(|x| x == OFFLINE))
    {
        s.push(OFFLINE.to_owned());
    }
}

/// What to do about a 403 `insufficient_scope`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepUp {
    /// Authorize again with these scopes: what was asked before, then what
    /// the challenge adds (2026-07-28 makes the union explicit).
    Reauthorize(Vec<String>),
    /// The challenge asks for nothing that was not already granted:
    /// another authorization cannot help.
    GiveUp,
}

/// The step-up decision for a challenge after `previous` were requested.
pub fn step_up(previous: &[String], challenged: Option<&[String]>) -> StepUp {
    let Some(challenged) = challenged.filter(|c| !c.is_empty()) else {
        return StepUp::GiveUp;
    };
    if challenged.iter().all(|c| previous.contains(c)) {
        return StepUp::GiveUp;
    }
    let mut union = previous.to_vec();
    union.extend(challenged.iter().cloned());
    dedup(&mut union);
    StepUp::Reauthorize(union)
}

/// Requested scopes that neither the resource metadata, the authorization
/// server metadata nor a challenge ever mentioned (for the Expert panel:
/// such a request is often refused, or silently narrowed).
pub fn never_advertised(requested: &[String], advertised: &[&[String]]) -> Vec<String> {
    requested
        .iter()
        .filter(|r| r.as_str() != "openid" && !advertised.iter().any(|a| a.contains(r)))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn selection_order() {
        let ch = v(&["mcp:basic"]);
        let prm = v(&["mcp:basic", "mcp:read", "mcp:write"]);
        assert_eq!(initial(Some(&ch), Some(&prm), None, true), Some(ch.clone()));
        assert_eq!(initial(None, Some(&prm), None, true), Some(prm.clone()));
        assert_eq!(initial(None, None, None, true), None);
        assert_eq!(initial(Some(&[]), Some(&[]), None, true), None);
    }

    #[test]
    fn offline_access_only_where_the_server_lists_it() {
        let prm = v(&["mcp:basic"]);
        let with = v(&["mcp:basic", "offline_access"]);
        let without = v(&["mcp:basic", "mcp:read"]);
        assert_eq!(
            initial(None, Some(&prm), Some(&with), true),
            Some(v(&["mcp:basic", "offline_access"]))
        );
        assert_eq!(initial(None, Some(&prm), Some(&with), false), Some(prm.clone()));
        assert_eq!(initial(None, Some(&prm), Some(&without), true), Some(prm.clone()));
        // Not alone: a request without scopes stays without them.
        assert_eq!(initial(None, None, Some(&with), true), None);
        // Not twice.
        assert_eq!(
            initial(Some(&v(&["offline_access", "a"])), None, Some(&with), true),
            Some(v(&["offline_access", "a"]))
        );
    }

    #[test]
    fn step_up_is_a_union_and_gives_up_on_repeats() {
        assert_eq!(
            step_up(&v(&["mcp:basic"]), Some(&v(&["mcp:basic", "mcp:write"]))),
            StepUp::Reauthorize(v(&["mcp:basic", "mcp:write"]))
        );
        assert_eq!(
            step_up(&v(&["mcp:basic"]), Some(&v(&["mcp:write"]))),
            StepUp::Reauthorize(v(&["mcp:basic", "mcp:write"]))
        );
        assert_eq!(step_up(&v(&["mcp:admin"]), Some(&v(&["mcp:admin"]))), StepUp::GiveUp);
        assert_eq!(step_up(&v(&["a"]), None), StepUp::GiveUp);
        assert_eq!(step_up(&[], Some(&v(&["x"]))), StepUp::Reauthorize(v(&["x"])));
    }

    #[test]
    fn unadvertised_scopes() {
        let prm = v(&["a", "b"]);
        let asm = v(&["c"]);
        assert_eq!(
            never_advertised(&v(&["a", "c", "d", "openid"]), &[&prm, &asm]),
            v(&["d"])
        );
        assert!(never_advertised(&v(&["a"]), &[&prm]).is_empty());
    }
}
