//! Load objects and functions of several experiments matched by what they
//! are, not where they were: the same file (path and build-id) mapped at
//! different addresses (address-space randomization) is one load object,
//! and a function of two builds of a program is one function (one row in
//! `functions`), matched by its object's path, its name and its source
//! file. Each build keeps its own symbol file, so that each experiment's
//! PCs are symbolized with the code that ran.

use crate::model::{FunctionId, Model, ObjectId, PcId};
use experiment::archive::ArchivedObject;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// What tells builds of one path apart: the build-id the archive recorded
/// (else its size and modification time); None when the experiment has no
/// archive entry for it (a live experiment, archiving off).
pub(crate) fn version_of(archive: &[ArchivedObject], path: &Path) -> Option<String> {
    let entry = archive.iter().find(|a| a.path == path && !a.is_missing())?;
    match (&entry.build_id, entry.size, entry.mtime_ns) {
        (Some(id), _, _) => Some(id.clone()),
        (None, Some(size), mtime) => Some(format!("size {size}, mtime {}", mtime.unwrap_or(0))),
        (None, None, _) => None,
    }
}

/// The model's load objects by (path, build): one per build of a path.
#[derive(Default)]
pub(crate) struct ObjectVersions {
    ids: HashMap<(PathBuf, Option<String>), ObjectId>,
    /// Per object: the first object of its path (itself for the first
    /// build seen), which stands for every build of the path.
    first_of_path: Vec<ObjectId>,
    by_path: HashMap<PathBuf, ObjectId>,
}

impl ObjectVersions {
    /// The object of `path` built as `version`, if known.
    pub(crate) fn get(&self, path: &Path, version: &Option<String>) -> Option<ObjectId> {
        self.ids
            .get(&(path.to_path_buf(), version.clone()))
            .copied()
    }

    /// Records a new object (the next id); the first object of the same
    /// path, if there is one already.
    pub(crate) fn add(
        &mut self,
        id: ObjectId,
        path: &Path,
        version: Option<String>,
    ) -> Option<ObjectId> {
        let earlier = self.by_path.get(path).copied();
        let first = earlier.unwrap_or(id);
        self.by_path.entry(path.to_path_buf()).or_insert(id);
        self.ids.insert((path.to_path_buf(), version), id);
        debug_assert_eq!(self.first_of_path.len(), id as usize);
        self.first_of_path.push(first);
        earlier
    }

    /// The object that stands for every build of `object`'s path.
    pub(crate) fn first_of_path(&self, object: ObjectId) -> ObjectId {
        self.first_of_path
            .get(object as usize)
            .copied()
            .unwrap_or(object)
    }
}

/// What makes two functions of different builds the same function.
type Identity = (ObjectId, String, Option<PathBuf>);

/// Functions of several builds of an object, matched by name and source
/// file: each build's function takes the first function of that identity
/// that no other function of the same build took (two static functions
/// of one name in one file stay apart).
#[derive(Default)]
pub(crate) struct FunctionMatches {
    by_identity: HashMap<Identity, Vec<FunctionId>>,
    /// (build's object, function): taken by a function of that build.
    taken: HashSet<(ObjectId, FunctionId)>,
}

impl FunctionMatches {
    /// The function of another build that `object`'s function `name`
    /// (defined in `source`) is, if any; taken for `object`'s build.
    pub(crate) fn find(
        &mut self,
        versions: &ObjectVersions,
        object: ObjectId,
        name: &str,
        source: &Option<PathBuf>,
    ) -> Option<FunctionId> {
        let identity = (
            versions.first_of_path(object),
            name.to_string(),
            source.clone(),
        );
        let candidates = self.by_identity.get(&identity)?;
        let id = candidates
            .iter()
            .copied()
            .find(|&f| !self.taken.contains(&(object, f)))?;
        self.taken.insert((object, id));
        Some(id)
    }

    /// Records `id`, new, as `object`'s function `name` from `source`.
    pub(crate) fn add(
        &mut self,
        versions: &ObjectVersions,
        object: ObjectId,
        name: &str,
        source: &Option<PathBuf>,
        id: FunctionId,
    ) {
        let identity = (
            versions.first_of_path(object),
            name.to_string(),
            source.clone(),
        );
        self.by_identity.entry(identity).or_default().push(id);
        self.taken.insert((object, id));
    }
}

/// Per load object of `model`: the first object of its path, which
/// stands for every build of it in the `objects` listing.
pub(crate) fn first_object_of_each_path(model: &Model) -> Vec<ObjectId> {
    let mut first: HashMap<&Path, ObjectId> = HashMap::new();
    (0..model.objects.len() as ObjectId)
        .map(|id| *first.entry(&model.object(id).path).or_insert(id))
        .collect()
}

/// Per PC of `model`: the first PC of the same object and offset. Each
/// experiment has its own PCs (its own addresses); the same instruction of
/// the same file is one PC in the listings.
pub(crate) fn first_pc_of_each_instruction(model: &Model) -> Vec<PcId> {
    let mut first: HashMap<(Option<ObjectId>, u64), PcId> = HashMap::new();
    model
        .pcs
        .iter()
        .enumerate()
        .map(|(id, pc)| *first.entry((pc.object, pc.offset)).or_insert(id as PcId))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archived(path: &str, build_id: Option<&str>) -> ArchivedObject {
        ArchivedObject {
            path: PathBuf::from(path),
            build_id: build_id.map(str::to_string),
            size: Some(10),
            mtime_ns: Some(20),
            copy: None,
        }
    }

    #[test]
    fn builds_are_told_apart_by_build_id_then_size_and_time() {
        let archive = [archived("/a", Some("ab12")), archived("/b", None)];
        assert_eq!(
            version_of(&archive, Path::new("/a")).as_deref(),
            Some("ab12")
        );
        assert_eq!(
            version_of(&archive, Path::new("/b")).as_deref(),
            Some("size 10, mtime 20")
        );
        assert_eq!(version_of(&archive, Path::new("/c")), None);
    }

    #[test]
    fn functions_of_two_builds_match_once_per_build() {
        let mut versions = ObjectVersions::default();
        assert_eq!(versions.add(0, Path::new("/p"), Some("v1".into())), None);
        assert_eq!(versions.add(1, Path::new("/p"), Some("v2".into())), Some(0));
        assert_eq!(versions.first_of_path(1), 0);
        assert_eq!(versions.get(Path::new("/p"), &Some("v2".into())), Some(1));
        let mut matches = FunctionMatches::default();
        let source = Some(PathBuf::from("p.c"));
        // Build 1 has two static `helper`s in p.c (ids 10 and 11).
        matches.add(&versions, 0, "helper", &source, 10);
        matches.add(&versions, 0, "helper", &source, 11);
        assert_eq!(matches.find(&versions, 0, "helper", &source), None);
        // Build 2's two helpers take one each, then there is none left.
        assert_eq!(matches.find(&versions, 1, "helper", &source), Some(10));
        assert_eq!(matches.find(&versions, 1, "helper", &source), Some(11));
        assert_eq!(matches.find(&versions, 1, "helper", &source), None);
        assert_eq!(matches.find(&versions, 1, "other", &source), None);
    }
}
