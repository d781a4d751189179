// Package supervisor is ferry's failure taxonomy and restart policy for its protoactor-go
// actors.
//
// It owns:
//
//   - [Class], the four kinds of failure ([Transient], [Poison], [Corrupt], [Bug]), and
//     [Classify], which maps whatever a child actor panicked with to one of them;
//   - [Failure] and [Fail], the tagged error actors panic with so that their intent reaches
//     the supervisor;
//   - [Backoff] (capped exponential backoff with jitter) and [Policy] (how many restarts
//     within which window);
//   - [Strategy], an [actor.SupervisorStrategy] (one-for-one) that restarts Transient
//     failures after a backoff delay, and a Bug once, and stops the child for good on
//     Poison, Corrupt, a second Bug, too many restarts (within a window, or in a row
//     without progress), or any failure of a child named by [WithNeverRestarted], telling
//     a [GiveUp] callback why;
//   - [KeepStack], which wraps an actor's producer so that its panics keep their stack with
//     their reason, for the Strategy to log with a bug.
//
// It never:
//
//   - restarts a Poison or Corrupt failure: retrying cannot help, and restarting into
//     damaged checkpoints could re-ingest history (lessons 13, 14, 15);
//   - escalates to its own parent or stops the process: a failed stream is reported
//     through [GiveUp], and the process and every other stream keep running;
//   - blocks the parent's goroutine: a restart is scheduled with a timer, not slept for;
//   - recovers panics itself: protoactor's mailbox does that and hands the reason here
//     ([KeepStack] recovers one only to panic again with its stack).
//
// Callers must:
//
//  1. Fail a child by panicking with a [*Failure] built by [Fail] (or an error that wraps
//     one), choosing its class deliberately. A panic with anything else is classified by
//     [Classify]: store corruption is Corrupt, an unknown recording is Poison, a runtime
//     error or a non-error value is Bug, any other error is Transient.
//  2. Build one [Strategy] per parent with [NewStrategy] and pass it with
//     [actor.WithSupervisor] on the parent's Props; never rely on protoactor's default.
//  3. Rebuild a restarted child's state from the checkpoint store in its Producer and
//     *actor.Started handler, not from fields, and release its resources on
//     *actor.Restarting and *actor.Stopping.
//  4. Mark the stream failed in the [GiveUp] callback (visible in status and health) with
//     the class and reason it is given. The callback runs on the parent's goroutine and
//     must not block.
//  5. Tell the Strategy when a child makes progress ([Strategy.Progressed]), and when it
//     stops a child for good itself ([Strategy.Forget]).
//  6. Subscribe to *actor.SupervisorEvent on the actor system's EventStream to turn
//     directives into metrics; the Strategy publishes one per decision.
package supervisor
