//! `collectors._native`: the static analysis of one x86-64 ELF file in one compiled pass.
//!
//! The Python implementation (`collectors/python_analysis.py`) is the reference: this
//! module must give the same fingerprints, which `tests/test_native_analysis.py` checks
//! on real gcc output and on libpython.  A change to the fingerprint rules is made in
//! both.  It exists because the analysis runs in `selector select`, on the
//! push path, where Python's per-instruction loop cost more than `objdump -d`.

mod analysis;
mod elf;
mod names;
mod resolver;
mod scan;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

type FunctionRow = ((String, String, bool, String), Vec<String>, u64, u64, usize, String, Vec<usize>, Vec<String>, Vec<usize>, bool);
type ObjectRow = (String, String, bool, u64, u64, String, bool, String);
type Result = (&'static str, String, Vec<FunctionRow>, Vec<ObjectRow>);

/// Analyse the bytes of an ELF file.
///
/// Returns (symbol_source, content_digest, functions, objects).
/// A function is ((key, parent symbol of its primary part, local, file), sorted part names, primary address, size,
/// instructions, fingerprint, callee function indices, callee stub names, data object
/// indices, has cold part); an object is (token, file, local, address, size, section,
/// writable, fingerprint), by address.  Raises ValueError on anything malformed.
/// The GIL is released while it runs: `selector select` analyses the binary in a thread
/// while the main thread reads git and the store.
#[pyfunction]
fn analyse(py: Python<'_>, data: &[u8]) -> PyResult<Result> {
    let outcome = py.detach(|| std::panic::catch_unwind(|| run(data)));
    match outcome {
        Ok(result) => result.map_err(PyValueError::new_err),
        Err(_) => Err(PyValueError::new_err("the native analysis failed on this file")),
    }
}

fn run(data: &[u8]) -> std::result::Result<Result, String> {
    let image = elf::Image::parse(data)?;
    let analysed = analysis::analyse(&image);
    let functions = analysed
        .functions
        .into_iter()
        .map(|(f, r)| ((f.key, r.raw, f.local, f.file), r.parts, r.address, r.size, r.instructions, r.fingerprint, r.callee_functions, r.callee_stubs, r.data_refs, r.has_cold_part))
        .collect();
    let objects = analysed
        .objects
        .into_iter()
        .map(|(o, r)| (o.token, o.symbol.file, o.symbol.local, o.symbol.address, o.symbol.size, r.section, r.writable, r.fingerprint))
        .collect();
    Ok((image.symbol_source, image.content_digest(), functions, objects))
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(analyse, module)?)?;
    Ok(())
}
