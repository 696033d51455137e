//! Desyncs judged by a majority of hash reports.
//!
//! Peers report their world hash at ticks of their choosing (campfire's
//! every tenth). A tick is judged once every voter has reported it, or
//! once the relay is `window` ticks past it: the hash reported from the
//! most origins wins (a voter's origin is where it connects from: one
//! origin's voters count once, with the hash of its best-ranked voter); a
//! tie goes to the voter ranked first (the relay ranks the authority
//! first, then by seniority). Whoever reported anything else, then or
//! later, has desynced. A judgment says whether its hash had a majority of
//! the voting origins or only won a tie.

use std::collections::BTreeMap;

/// A peer, as the judge knows it (the relay's slot number).
pub type Voter = usize;

/// Where a voter connects from, as a number (the relay's `Origin`).
pub type VoterOrigin = u64;

/// One judged tick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgment {
    /// The tick.
    pub tick: u64,
    /// The hash that won.
    pub hash: u64,
    /// Origins that agreed.
    pub agreed: usize,
    /// Origins that voted.
    pub voting: usize,
    /// Reporters whose hash differs: desynced.
    pub dissenters: Vec<Voter>,
}

/// How many judged ticks are remembered for reports arriving late.
const REMEMBERED_VERDICTS: usize = 64;

/// The hash reports of one level and its verdicts.
#[derive(Debug)]
pub struct HashJudge {
    window: u64,
    pending: BTreeMap<u64, BTreeMap<Voter, u64>>,
    /// Judged ticks: the hash that won, and whether a majority of the
    /// voting origins reported it.
    verdicts: BTreeMap<u64, (u64, bool)>,
}

/// What became of one report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Filed {
    /// Waiting for the tick's judgment.
    Pending,
    /// The tick was judged already, and this hash agrees.
    Agrees,
    /// The tick was judged already, and this hash differs: desynced.
    Differs,
    /// Not judged: for a tick ahead of the relay, or older than anything
    /// remembered, or a second report of the same tick.
    Ignored,
}

impl HashJudge {
    /// A judge that waits at most `window` ticks for a tick's reports.
    pub fn new(window: u64) -> Self {
        Self {
            window,
            pending: BTreeMap::new(),
            verdicts: BTreeMap::new(),
        }
    }

    /// Files `voter`'s hash for `tick` while the relay is at `now_tick`.
    pub fn report(&mut self, voter: Voter, tick: u64, hash: u64, now_tick: u64) -> Filed {
        if tick > now_tick {
            return Filed::Ignored;
        }
        if let Some((v, majority)) = self.verdicts.get(&tick) {
            // A split decided nothing, late reports included.
            if !majority {
                return Filed::Ignored;
            }
            return if *v == hash {
                Filed::Agrees
            } else {
                Filed::Differs
            };
        }
        let oldest_remembered = self.verdicts.keys().next().copied().unwrap_or(0);
        if tick + self.window < now_tick && tick < oldest_remembered {
            return Filed::Ignored;
        }
        let reports = self.pending.entry(tick).or_default();
        if reports.contains_key(&voter) {
            return Filed::Ignored;
        }
        reports.insert(voter, hash);
        Filed::Pending
    }

    /// Judges every tick that is due at `now_tick`: all of `voters` have
    /// reported it, or the window has passed. `voters` is in rank order
    /// (ties go to the first), each with its origin. A tick no voter
    /// reported is dropped unjudged.
    pub fn judge(&mut self, now_tick: u64, voters: &[(Voter, VoterOrigin)]) -> Vec<Judgment> {
        let due: Vec<u64> = self
            .pending
            .iter()
            .filter(|(tick, reports)| {
                **tick + self.window <= now_tick
                    || voters.iter().all(|(v, _)| reports.contains_key(v))
            })
            .map(|(tick, _)| *tick)
            .collect();
        let mut out = Vec::new();
        for tick in due {
            let Some(reports) = self.pending.remove(&tick) else {
                continue;
            };
            let Some((hash, agreed, voting)) = verdict(&reports, voters) else {
                continue;
            };
            let dissenters = reports
                .iter()
                .filter(|(_, h)| **h != hash)
                .map(|(v, _)| *v)
                .collect();
            self.verdicts.insert(tick, (hash, 2 * agreed > voting));
            while self.verdicts.len() > REMEMBERED_VERDICTS {
                self.verdicts.pop_first();
            }
            out.push(Judgment {
                tick,
                hash,
                agreed,
                voting,
                dissenters,
            });
        }
        out
    }

    /// The verdict for `tick`, if it was judged and is still remembered:
    /// the hash, and whether a majority of the voting origins reported it
    /// (rather than it winning a tie).
    pub fn verdict(&self, tick: u64) -> Option<(u64, bool)> {
        self.verdicts.get(&tick).copied()
    }

    /// Forgets `voter`'s pending reports (it is being rebuilt).
    pub fn forget(&mut self, voter: Voter) {
        for reports in self.pending.values_mut() {
            reports.remove(&voter);
        }
    }

    /// Ticks waiting for a judgment.
    pub fn pending_ticks(&self) -> usize {
        self.pending.len()
    }
}

/// The winning hash among the voters' reports, how many origins voted for
/// it and how many voted at all. An origin votes once, for the hash most of
/// its own voters reported (ties to its best-ranked); across origins, ties
/// go to the best-ranked voter holding one of the tied hashes.
fn verdict(
    reports: &BTreeMap<Voter, u64>,
    voters: &[(Voter, VoterOrigin)],
) -> Option<(u64, usize, usize)> {
    let ranked = voters
        .iter()
        .filter_map(|(v, origin)| reports.get(v).map(|h| (*origin, *h)));
    let mut by_origin: BTreeMap<VoterOrigin, Vec<u64>> = BTreeMap::new();
    for (origin, h) in ranked.clone() {
        by_origin.entry(origin).or_default().push(h);
    }
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    for hashes in by_origin.values() {
        *counts.entry(most_reported(hashes)).or_default() += 1;
    }
    let top = counts.values().copied().max()?;
    ranked
        .map(|(_, h)| h)
        .find(|h| counts.get(h) == Some(&top))
        .map(|h| (h, top, by_origin.len()))
}

/// The hash `hashes` (in rank order) hold most often, ties to the first.
fn most_reported(hashes: &[u64]) -> u64 {
    let count = |h: u64| hashes.iter().filter(|x| **x == h).count();
    let mut best = hashes[0];
    for h in hashes {
        if count(*h) > count(best) {
            best = *h;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Voters each from an origin of their own.
    fn apart(voters: &[Voter]) -> Vec<(Voter, VoterOrigin)> {
        voters.iter().map(|v| (*v, *v as VoterOrigin)).collect()
    }

    #[test]
    fn the_majority_wins_and_the_minority_is_desynced() {
        let mut j = HashJudge::new(60);
        for (v, h) in [(0, 7), (1, 9), (2, 9)] {
            assert_eq!(j.report(v, 10, h, 12), Filed::Pending);
        }
        let out = j.judge(12, &apart(&[0, 1, 2]));
        assert_eq!(
            out,
            vec![Judgment {
                tick: 10,
                hash: 9,
                agreed: 2,
                voting: 3,
                dissenters: vec![0]
            }],
            "the authority (ranked first) loses to two others"
        );
        assert_eq!(j.report(0, 10, 9, 13), Filed::Agrees);
        assert_eq!(
            j.report(3, 10, 8, 13),
            Filed::Differs,
            "a late report is still judged"
        );
    }

    #[test]
    fn a_tie_goes_to_the_first_ranked_voter() {
        let mut j = HashJudge::new(60);
        j.report(1, 10, 5, 10);
        j.report(2, 10, 6, 10);
        let out = j.judge(10, &apart(&[2, 1]));
        assert_eq!(out[0].hash, 6);
        assert_eq!(
            (out[0].agreed, out[0].voting),
            (1, 2),
            "a tie, not a majority"
        );
        assert_eq!(out[0].dissenters, vec![1]);
    }

    /// Issue 44, finding 5: three seats of one origin outvoted two honest
    /// players from two others.
    #[test]
    fn one_origins_seats_vote_once() {
        let mut j = HashJudge::new(60);
        for (v, h) in [(0, 66), (1, 66), (2, 66), (3, 5), (4, 5)] {
            j.report(v, 10, h, 10);
        }
        let voters = [(0, 9), (1, 9), (2, 9), (3, 3), (4, 4)];
        let out = j.judge(10, &voters);
        assert_eq!(out[0].hash, 5);
        assert_eq!((out[0].agreed, out[0].voting), (2, 3));
        assert_eq!(out[0].dissenters, vec![0, 1, 2]);
    }

    /// Players behind one address (a household) still outvote their own
    /// astray authority: an origin votes for what most of its seats say.
    #[test]
    fn an_origin_votes_for_what_most_of_its_seats_report() {
        let mut j = HashJudge::new(60);
        for (v, h) in [(0, 66), (1, 5), (2, 5)] {
            j.report(v, 10, h, 10);
        }
        let out = j.judge(10, &[(0, 1), (1, 1), (2, 1)]);
        assert_eq!(out[0].hash, 5);
        assert_eq!((out[0].agreed, out[0].voting), (1, 1));
        assert_eq!(out[0].dissenters, vec![0]);
    }

    #[test]
    fn a_tick_waits_for_every_voter_until_the_window_passes() {
        let mut j = HashJudge::new(60);
        j.report(0, 10, 5, 10);
        assert!(
            j.judge(69, &apart(&[0, 1])).is_empty(),
            "voter 1 may still report"
        );
        let out = j.judge(70, &apart(&[0, 1]));
        assert_eq!(out[0].hash, 5);
        assert_eq!(j.report(0, 10, 5, 70), Filed::Agrees);
        assert_eq!(j.report(1, 11, 5, 10), Filed::Ignored, "ahead of the relay");
    }

    #[test]
    fn a_second_report_of_a_tick_does_not_vote_twice() {
        let mut j = HashJudge::new(60);
        j.report(0, 10, 5, 10);
        assert_eq!(j.report(0, 10, 6, 10), Filed::Ignored);
        j.report(1, 10, 6, 10);
        j.report(2, 10, 5, 10);
        assert_eq!(j.judge(10, &apart(&[1, 0, 2]))[0].hash, 5);
    }
}
