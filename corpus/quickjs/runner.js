
/* corpus/quickjs/runner.js, appended by make_suite.sh to microbench.js in place of its
 * last line (the call of main), so each test function runs a FIXED number of iterations:
 * microbench's bench() doubles n until a run takes 2 ms of os.now() time, which would
 * make callgrind counts depend on the clock.
 *
 *     qjs microbench.js N TEST...
 *
 * calls each named test function of microbench.js once as TEST(N) (its own loop runs N
 * times), in the order given, and prints their names and what they returned; a test
 * that is not defined, or that reports a failure (returns a negative count), exits 1.
 * Math.random is replaced by a fixed LCG and microbench's clock by a constant, so
 * nothing a test does depends on the time or on a random seed. */
(function () {
    var seed = 12345;
    Math.random = function () {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed / 2147483648;
    };
    get_clock = function () { return 0; };
    var n = +scriptArgs[1], results = [];
    if (!(n >= 1) || scriptArgs.length < 3)
        throw new Error("usage: qjs microbench.js N TEST...");
    for (var i = 2; i < scriptArgs.length; i++) {
        var name = scriptArgs[i], f = globalThis[name];
        if (typeof f !== "function")
            throw new Error("no test " + name + " in microbench.js");
        var r = f(n);
        if (r < 0)
            throw new Error(name + " failed");
        results.push(name + " " + r);
    }
    console.log(results.join("\n"));
})();
