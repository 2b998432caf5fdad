-- floe: bench/paced.lua -- wrk's clients paced: each pauses between an
-- answer and its next request, BENCH_PACE_MS (60) on average, drawn from
-- an exponential distribution so that the clients do not fall into step.
-- Every proxy is then offered the same load, below what it serves flat
-- out, and wrk's latencies (from each request's first byte written) are
-- the proxy's, not the queue of a saturated load CPU.
local mean = tonumber(os.getenv("BENCH_PACE_MS") or "60")

math.randomseed(os.time())

function delay()
	return -mean * math.log(1 - math.random())
end
