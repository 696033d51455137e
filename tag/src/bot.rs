//! The computer runner: [`Chaser`] runs at the nearest runner when it is
//! "it", and away from "it" otherwise.

use game_api::{Bot, PlayerId};

use crate::wire::Stick;
use crate::world::TagWorld;

/// A bot driving one runner.
#[derive(Clone, Debug)]
pub struct Chaser {
    me: PlayerId,
}

impl Bot<TagWorld> for Chaser {
    fn new(player: PlayerId) -> Self {
        Self { me: player }
    }

    fn player_id(&self) -> &PlayerId {
        &self.me
    }

    fn decide(&mut self, world: &TagWorld) -> Stick {
        let arena = world.arena();
        let Some(me) = arena.runners.get(&self.me) else {
            return Stick::default();
        };
        let toward = |x: i32, y: i32| Stick {
            dx: (x - me.x).signum() as i8,
            dy: (y - me.y).signum() as i8,
        };
        if arena.it.as_ref() == Some(&self.me) {
            let nearest = arena
                .runners
                .iter()
                .filter(|(id, _)| **id != self.me)
                .min_by_key(|(_, r)| (r.x - me.x).abs() + (r.y - me.y).abs());
            return nearest.map_or_else(Stick::default, |(_, r)| toward(r.x, r.y));
        }
        let Some(it) = arena.it.as_ref().and_then(|it| arena.runners.get(it)) else {
            return Stick::default();
        };
        let away = toward(it.x, it.y);
        // Away from it, sliding along a wall instead of pressing into it.
        let centre = world.side() / 2;
        let slide = |d: i8, pos: i32| {
            if d == 0 {
                (centre - pos).signum() as i8
            } else {
                -d
            }
        };
        Stick {
            dx: slide(away.dx, me.x),
            dy: slide(away.dy, me.y),
        }
    }
}
