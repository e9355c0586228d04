package nixmsg

import (
	"crypto/rand"
	"fmt"
	"time"
)

// newUUIDv7 returns a UUIDv7 in its 36-character form (RFC 9562): 48 bits of Unix milliseconds,
// then random bits. The SDK uses it as the message id (spec 6.2).
func newUUIDv7(now time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(now.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	b[6] = 0x70 | (b[6] & 0x0f)
	b[8] = 0x80 | (b[8] & 0x3f)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
