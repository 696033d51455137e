//! Input delays fitted to each link (issue 15, the `input-delay` feature).
//!
//! A guest samples its input for tick `T + 1 + d` when it applies the
//! bundle of tick `T`, which the host sent as it ran tick `T`; the host needs
//! that input before it runs tick `T + 1 + d`, `(d + 1)` ticks later. So the
//! delay must cover the input channel's round trip and its jitter:
//! `d = ceil(budget / tick) - 1` with `budget` the larger of
//! `SRTT + 4 · RTTVAR` (the margin TCP's retransmission timer takes over the
//! same two figures, RFC 6298) and the slowest recent round trip (on a lossy
//! link, one that waited for a retransmission, as inputs behind a lost
//! message do), inside [`MIN_INPUT_DELAY_TICKS`]..=[`MAX_INPUT_DELAY_TICKS`].
//! A link not yet measured gets the spec's [`INPUT_DELAY_TICKS`].
//!
//! Delays are chosen when a level is built (setup and each transition) and
//! fixed for that level: every tick of a level has exactly one input slot
//! per player, so there is nothing to gap-fill or drop. Ticks before a
//! player's first delayed input get the neutral input, as the spec's first
//! `INPUT_DELAY_TICKS` ticks do.
//!
//! Fairness: the host's own players (the host player and its bots) take
//! the smallest delay any guest has, never less than the minimum, so no one
//! on the host's machine reacts sooner than the best-connected guest.
//!
//! A relay ([`crate::peer`]) fits the same way: its frames play the host's
//! part, and every player is a guest whose link it measures.

use std::collections::BTreeMap;
use std::time::Duration;

use game_api::PlayerId;
use protocol::tick::{FIXED_DT, INPUT_DELAY_TICKS, MAX_INPUT_DELAY_TICKS, MIN_INPUT_DELAY_TICKS};

use crate::rtt::RttEstimate;

/// How many round-trip variations the delay adds as margin.
const JITTER_MARGIN: u32 = 4;

/// The input delay that fits a link with round-trip estimate `rtt`.
pub fn fit(rtt: &RttEstimate) -> u64 {
    let Some(srtt) = rtt.smoothed() else {
        return INPUT_DELAY_TICKS;
    };
    let budget = (srtt + rtt.variation() * JITTER_MARGIN).max(rtt.recent_max().unwrap_or(srtt));
    let tick = Duration::from_secs_f64(FIXED_DT);
    let ticks = budget.as_nanos().div_ceil(tick.as_nanos());
    u64::try_from(ticks)
        .unwrap_or(u64::MAX)
        .saturating_sub(1)
        .clamp(MIN_INPUT_DELAY_TICKS, MAX_INPUT_DELAY_TICKS)
}

/// Every player's delay for a level: each guest's fitted to its link, the
/// host's own players the smallest guest delay (the minimum without guests).
pub fn for_level(
    guests: &BTreeMap<PlayerId, RttEstimate>,
    local: &[PlayerId],
) -> BTreeMap<PlayerId, u64> {
    let mut delays: BTreeMap<PlayerId, u64> = guests
        .iter()
        .map(|(id, rtt)| (id.clone(), fit(rtt)))
        .collect();
    let local_delay = delays
        .values()
        .copied()
        .min()
        .unwrap_or(MIN_INPUT_DELAY_TICKS);
    for id in local {
        delays.insert(id.clone(), local_delay);
    }
    delays
}

/// Checks the delays a level arrived with, as a guest that did (`took_up`)
/// or did not take up the feature, and returns `me`'s delay.
///
/// # Errors
///
/// A description of what is wrong: fitted delays the guest did not ask for,
/// a roster member without one (or a stranger with one), or a delay out of
/// bounds.
pub fn check_level(
    delays: &BTreeMap<PlayerId, u64>,
    roster: &[PlayerId],
    me: &PlayerId,
    took_up: bool,
) -> Result<u64, String> {
    if delays.is_empty() {
        return Ok(INPUT_DELAY_TICKS);
    }
    check_delays(delays, roster, took_up)?;
    delays
        .get(me)
        .copied()
        .ok_or_else(|| "no input delay for this player".into())
}

/// Checks a level's delays as [`check_level`] does, for a peer that plays
/// no part in it (a spectator).
///
/// # Errors
///
/// As [`check_level`].
pub fn check_delays(
    delays: &BTreeMap<PlayerId, u64>,
    roster: &[PlayerId],
    took_up: bool,
) -> Result<(), String> {
    if delays.is_empty() {
        return Ok(());
    }
    if !took_up {
        return Err("fitted input delays, which this guest did not take up".into());
    }
    if delays.len() != roster.len() || roster.iter().any(|p| !delays.contains_key(p)) {
        return Err("input delays do not match the roster".into());
    }
    if let Some((p, d)) = delays
        .iter()
        .find(|(_, d)| !(MIN_INPUT_DELAY_TICKS..=MAX_INPUT_DELAY_TICKS).contains(*d))
    {
        return Err(format!("input delay {d} for {p} is out of bounds"));
    }
    Ok(())
}

/// Checks a relay joiner's delays: it is not in the roster yet (it enters
/// with a later frame's roster add), so its own delay is the one its init
/// names (`claimed`), and the level's name exactly the roster.
///
/// # Errors
///
/// As [`check_level`], or a claimed delay out of bounds, or other than the
/// spec's for a guest that did not take up the feature.
pub fn check_joiner(
    delays: &BTreeMap<PlayerId, u64>,
    roster: &[PlayerId],
    claimed: u64,
    took_up: bool,
) -> Result<u64, String> {
    check_delays(delays, roster, took_up)?;
    if !took_up && claimed != INPUT_DELAY_TICKS {
        return Err("a fitted input delay, which this guest did not take up".into());
    }
    if !(MIN_INPUT_DELAY_TICKS..=MAX_INPUT_DELAY_TICKS).contains(&claimed) {
        return Err(format!("input delay {claimed} is out of bounds"));
    }
    Ok(claimed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(rtt_ms: &[u64]) -> RttEstimate {
        let mut e = RttEstimate::default();
        for ms in rtt_ms {
            e.sample(Duration::from_millis(*ms));
        }
        e
    }

    #[test]
    fn a_joiner_takes_its_own_claimed_delay_within_bounds() {
        let roster = [PlayerId::new("a")];
        let delays = BTreeMap::from([(PlayerId::new("a"), 4)]);
        assert_eq!(check_joiner(&delays, &roster, 6, true), Ok(6));
        assert_eq!(check_joiner(&BTreeMap::new(), &roster, 6, true), Ok(6));
        assert!(check_joiner(&BTreeMap::new(), &roster, 6, false).is_err());
        assert!(check_joiner(&delays, &roster, 3, false).is_err());
        assert!(check_joiner(&delays, &roster, MAX_INPUT_DELAY_TICKS + 1, true).is_err());
        assert_eq!(
            check_joiner(&BTreeMap::new(), &roster, INPUT_DELAY_TICKS, false),
            Ok(INPUT_DELAY_TICKS)
        );
    }

    #[test]
    fn a_clean_link_gets_the_minimum_and_an_unmeasured_one_the_spec_default() {
        assert_eq!(fit(&link(&[2; 20])), MIN_INPUT_DELAY_TICKS);
        assert_eq!(fit(&RttEstimate::default()), INPUT_DELAY_TICKS);
    }

    #[test]
    fn the_delay_covers_the_round_trip_and_its_jitter() {
        // 150 ms steady: ceil(150 / 33.3) - 1 = 4 ticks, whose 5 ticks of
        // budget (167 ms) cover the round trip.
        let steady = link(&[150; 40]);
        assert!(steady.variation() < Duration::from_millis(1));
        assert_eq!(fit(&steady), 4);
        // 150 ± 20 ms: the margin grows with the variation.
        let jittery: Vec<u64> = (0..40)
            .map(|i| if i % 2 == 0 { 130 } else { 170 })
            .collect();
        let d = fit(&link(&jittery));
        assert!((5..=7).contains(&d), "{d}");
        // A satellite link is capped.
        assert_eq!(fit(&link(&[900; 10])), MAX_INPUT_DELAY_TICKS);
    }

    #[test]
    fn the_host_players_take_the_smallest_guest_delay() {
        let guests: BTreeMap<PlayerId, RttEstimate> = [
            (PlayerId::new("guest-1"), link(&[150; 40])),
            (PlayerId::new("guest-2"), link(&[110; 40])),
        ]
        .into_iter()
        .collect();
        let host = PlayerId::new("host");
        let d = for_level(&guests, std::slice::from_ref(&host));
        assert_eq!(d[&PlayerId::new("guest-1")], 4);
        assert_eq!(d[&PlayerId::new("guest-2")], 3);
        assert_eq!(d[&host], 3);
        let alone = for_level(&BTreeMap::new(), std::slice::from_ref(&host));
        assert_eq!(alone[&host], MIN_INPUT_DELAY_TICKS);
    }

    #[test]
    fn a_guest_checks_the_delays_it_is_given() {
        let (a, b) = (PlayerId::new("a"), PlayerId::new("b"));
        let roster = [a.clone(), b.clone()];
        let good: BTreeMap<PlayerId, u64> = [(a.clone(), 2), (b.clone(), 6)].into();
        assert_eq!(check_level(&good, &roster, &b, true), Ok(6));
        assert_eq!(
            check_level(&BTreeMap::new(), &roster, &b, true),
            Ok(INPUT_DELAY_TICKS)
        );
        assert!(check_level(&good, &roster, &b, false).is_err());
        let short: BTreeMap<PlayerId, u64> = [(b.clone(), 6)].into();
        assert!(check_level(&short, &roster, &b, true).is_err());
        let stranger: BTreeMap<PlayerId, u64> = [(a.clone(), 2), (PlayerId::new("c"), 6)].into();
        assert!(check_level(&stranger, &roster, &b, true).is_err());
        let slow: BTreeMap<PlayerId, u64> =
            [(a.clone(), 2), (b.clone(), MAX_INPUT_DELAY_TICKS + 1)].into();
        assert!(check_level(&slow, &roster, &b, true).is_err());
        let fast: BTreeMap<PlayerId, u64> = [(a, MIN_INPUT_DELAY_TICKS - 1), (b.clone(), 6)].into();
        assert!(check_level(&fast, &roster, &b, true).is_err());
    }
}
