"""Onboarding: a project's first hour (`init`, the survey of its build and benchmarks,
`doctor`, the machine check, the demo and its planted history)."""
