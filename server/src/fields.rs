//! Parsing `PUT /session` bodies into stored lobby fields: every value from
//! the client is sanitized or refused here, at the edge.

use lobby_api::api::{PutSessionRequest, SessionSummary};
use lobby_api::name::{
    LABEL_MAX_CHARS, SESSION_NAME_MAX_CHARS, sanitize_display_name, sanitize_label,
};
use lobby_api::sdp::check_plausible_sdp;

use crate::config::Config;
use crate::error::AppError;
use crate::store::LobbyFields;
use lobby_api::api::ErrorCode;

/// Lobby fields for a new session; the required ones must be present.
pub fn fields_for_create(
    req: &PutSessionRequest,
    config: &Config,
) -> Result<LobbyFields, AppError> {
    let missing = |field: &str| AppError::invalid_field(field, "required when creating a session");
    let fields = LobbyFields {
        public: req.public.unwrap_or(true),
        summary: SessionSummary {
            name: sanitize_label(
                req.name.as_deref().ok_or_else(|| missing("name"))?,
                SESSION_NAME_MAX_CHARS,
            ),
            host_name: sanitize_display_name(
                req.host_name
                    .as_deref()
                    .ok_or_else(|| missing("hostName"))?,
            ),
            players: req.players.unwrap_or(1),
            max_players: req.max_players.ok_or_else(|| missing("maxPlayers"))?,
            build: sanitize_label(
                req.build.as_deref().ok_or_else(|| missing("build"))?,
                LABEL_MAX_CHARS,
            ),
            difficulty: optional_label(req.difficulty.as_deref()),
            campaign: optional_label(req.campaign.as_deref()),
            host_kind: req.host_kind.ok_or_else(|| missing("hostKind"))?,
            in_progress: req.in_progress.unwrap_or(false),
            bots: req.bots.unwrap_or(0),
            start_at: req.start_at,
        },
        meta: meta_json(req.meta.as_ref(), config)?,
    };
    check_counts(&fields, config)?;
    Ok(fields)
}

/// `current` with every field the update carries replaced.
pub fn fields_for_update(
    req: &PutSessionRequest,
    current: &LobbyFields,
    config: &Config,
) -> Result<LobbyFields, AppError> {
    let fields = LobbyFields {
        public: req.public.unwrap_or(current.public),
        summary: SessionSummary {
            name: req.name.as_deref().map_or_else(
                || current.summary.name.clone(),
                |n| sanitize_label(n, SESSION_NAME_MAX_CHARS),
            ),
            host_name: req
                .host_name
                .as_deref()
                .map_or_else(|| current.summary.host_name.clone(), sanitize_display_name),
            players: req.players.unwrap_or(current.summary.players),
            max_players: req.max_players.unwrap_or(current.summary.max_players),
            build: req.build.as_deref().map_or_else(
                || current.summary.build.clone(),
                |b| sanitize_label(b, LABEL_MAX_CHARS),
            ),
            difficulty: req.difficulty.as_deref().map_or_else(
                || current.summary.difficulty.clone(),
                |d| optional_label(Some(d)),
            ),
            campaign: req.campaign.as_deref().map_or_else(
                || current.summary.campaign.clone(),
                |c| optional_label(Some(c)),
            ),
            host_kind: req.host_kind.unwrap_or(current.summary.host_kind),
            in_progress: req.in_progress.unwrap_or(current.summary.in_progress),
            bots: req.bots.unwrap_or(current.summary.bots),
            start_at: req.start_at.or(current.summary.start_at),
        },
        meta: match &req.meta {
            Some(meta) => meta_json(Some(meta), config)?,
            None => current.meta.clone(),
        },
    };
    check_counts(&fields, config)?;
    Ok(fields)
}

/// The offer of a new round, checked for plausibility.
pub fn checked_offer(req: &PutSessionRequest, config: &Config) -> Result<Option<String>, AppError> {
    match &req.offer {
        None => Ok(None),
        Some(sdp) => check_plausible_sdp(sdp, config.max_sdp_bytes)
            .map(|()| Some(sdp.clone()))
            .map_err(|e| AppError::new(ErrorCode::InvalidSdp, format!("offer: {e}"))),
    }
}

fn optional_label(raw: Option<&str>) -> Option<String> {
    raw.map(|s| sanitize_label(s, LABEL_MAX_CHARS))
        .filter(|s| !s.is_empty())
}

fn meta_json(
    meta: Option<&serde_json::Value>,
    config: &Config,
) -> Result<Option<String>, AppError> {
    let Some(meta) = meta else { return Ok(None) };
    if meta.is_null() {
        return Ok(None);
    }
    if !meta.is_object() {
        return Err(AppError::invalid_field("meta", "must be a JSON object"));
    }
    let text = meta.to_string();
    if text.len() > config.max_meta_bytes {
        return Err(AppError::invalid_field(
            "meta",
            format!(
                "{} bytes of JSON, more than the {} allowed",
                text.len(),
                config.max_meta_bytes
            ),
        ));
    }
    Ok(Some(text))
}

fn check_counts(fields: &LobbyFields, config: &Config) -> Result<(), AppError> {
    let fields = &fields.summary;
    if fields.max_players == 0 || fields.max_players > config.max_players {
        return Err(AppError::invalid_field(
            "maxPlayers",
            format!("must be between 1 and {}", config.max_players),
        ));
    }
    if fields.players > fields.max_players {
        return Err(AppError::invalid_field(
            "players",
            "cannot exceed maxPlayers",
        ));
    }
    if fields.bots > fields.players {
        return Err(AppError::invalid_field("bots", "cannot exceed players"));
    }
    if fields
        .start_at
        .is_some_and(|n| n == 0 || n > fields.max_players)
    {
        return Err(AppError::invalid_field(
            "startAt",
            "must be between 1 and maxPlayers",
        ));
    }
    if fields.build.is_empty() {
        return Err(AppError::invalid_field("build", "must not be empty"));
    }
    Ok(())
}
