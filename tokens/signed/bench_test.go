package signed

import (
	"testing"
	"time"
)

// BenchmarkVerify compares verifying a token every time (uncached) with
// answering it from the verified-token cache (cached).
func BenchmarkVerify(b *testing.B) {
	for _, alg := range algs {
		k := mustKey(b, alg)
		r := mustRing(b, k)
		tok := mustSign(b, mustSigner(b, r), "node-a", "invoice-sweeper", 42, time.Now())
		for _, mode := range []struct {
			name string
			size int
		}{{"uncached", 0}, {"cached", DefaultCacheSize}} {
			v, err := NewVerifier(r, testIssuer, testAudience, WithCacheSize(mode.size))
			if err != nil {
				b.Fatal(err)
			}
			b.Run(alg+"/"+mode.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := v.VerifyClaims(tok); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(alg+"/"+mode.name+"-parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := v.VerifyClaims(tok); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkSign measures issuing one token.
func BenchmarkSign(b *testing.B) {
	for _, alg := range algs {
		s := mustSigner(b, mustRing(b, mustKey(b, alg)))
		now := time.Now()
		b.Run(alg, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := s.Sign("node-a", "invoice-sweeper", 42, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
