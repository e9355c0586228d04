package nixmsg

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is the reconnect and retry schedule of spec 9 step 4: 1 s, doubling up to 30 s, each
// delay ±30% jitter. The zero value is not usable; create it with NewBackoff.
//
//	b := nixmsg.NewBackoff()
//	time.Sleep(b.Next()) // about 1 s, then 2 s, 4 s … 30 s
//	b.Reset()            // after 60 s online
type Backoff struct {
	// Initial is the first delay (1 s).
	Initial time.Duration
	// Max is the largest delay before jitter (30 s).
	Max time.Duration
	// Jitter is the relative jitter, applied as ± this fraction (0.3).
	Jitter float64
	// Random returns values in [0, 1); tests pass a fixed one.
	Random  func() float64
	attempt int
}

// NewBackoff returns a Backoff with the spec's parameters.
func NewBackoff() *Backoff {
	return &Backoff{Initial: time.Second, Max: 30 * time.Second, Jitter: 0.3, Random: rand.Float64}
}

// Attempts returns how many delays were handed out since the last reset.
func (b *Backoff) Attempts() int { return b.attempt }

// Next returns the delay before the next try; each call advances the schedule.
func (b *Backoff) Next() time.Duration {
	base := math.Min(float64(b.Max), float64(b.Initial)*math.Pow(2, float64(min(b.attempt, 30))))
	b.attempt++
	factor := 1 + b.Jitter*(2*b.Random()-1)
	return time.Duration(math.Round(base*factor/float64(time.Millisecond))) * time.Millisecond
}

// Reset starts the schedule again at the first delay.
func (b *Backoff) Reset() { b.attempt = 0 }
