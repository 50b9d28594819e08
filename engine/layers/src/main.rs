//! `rowdex-layers [WORKSPACE]`: per target, the files, the file-to-file imports and the import
//! circles; for engine/query, the imports that reach up a layer.

use std::path::PathBuf;

use rowdex_layers::{layers, own_workspace, workspace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::args_os()
        .nth(1)
        .map_or_else(own_workspace, PathBuf::from);
    let all = workspace(&root)?;
    let (mut imports, mut circles) = (0, 0);
    println!("target | files | imports | files in circles");
    for target in &all {
        let in_circles: usize = target.circles.iter().map(Vec::len).sum();
        imports += target.edges.len();
        circles += target.circles.len();
        println!(
            "{} [{}] | {} | {} | {}",
            target.target.package,
            target.target.name,
            target.target.files.len(),
            target.edges.len(),
            in_circles
        );
        for circle in &target.circles {
            let files: Vec<String> = circle.iter().map(|p| p.display().to_string()).collect();
            println!("  circle of {}: {}", circle.len(), files.join(", "));
        }
        if target.target.package == layers::LAYERED_PACKAGE && target.target.name == "lib" {
            for violation in layers::violations(&target.target, &target.edges) {
                println!("  layer: {violation}");
            }
        }
    }
    println!("total: {imports} imports, {circles} circles");
    Ok(())
}
