"""Issue 47's measurement on the committed packs (corpus/*/pack): the executed-changed rule's runs on
the closest pairs, how far a floor on the size of a change (the predicted effect, the executed
share), taken from the other projects' changes, would cut them, and which changes a rule that
skips small, hazard-free runs would miss.  Run from the repository's top: python3 corpus/size_floor.py"""
import numpy as np, pandas as pd, pyarrow.parquet as pq
from pathlib import Path
from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models import decision as d
from perf_selector.selector.evaluation.evaluation_pack import with_every_feature
rows = {}
for pack in sorted(Path('corpus').glob('*/pack/features.parquet')):
    p = pack.parent.parent.name
    f = pq.read_table(pack).to_pandas()
    f = f[f.label.notna()]
    f = f.loc[f.groupby(['new', 'benchmark']).commit_hops.idxmin()]
    f = with_every_feature(f)
    F = f[FEATURE_NAMES].to_numpy(float)
    rule = d.executed_rule_scores(F) > 0
    rows[p] = (f[rule], f.label.astype(bool).sum())
for col in ['predicted_effect', 'executed_changed_share']:
    print(f"== floor on |{col}| from the other projects' changes (their smallest)")
    tot_rule = tot_kept = tot_ch = tot_missed = 0
    for p, (r, changes) in rows.items():
        others = pd.concat([o for q, (o, _) in rows.items() if q != p])
        floor = np.nanmin(np.abs(others[col][others.label.astype(bool)]))
        v = np.abs(r[col].fillna(np.inf))
        kept = v >= floor
        lab = r.label.astype(bool)
        missed = (lab & ~kept).sum()
        tot_rule += len(r); tot_kept += kept.sum(); tot_ch += lab.sum(); tot_missed += missed
        print(f"{p:14s} changes {int(changes):3d} rule {len(r):4d} -> {int(kept.sum()):4d} (floor {floor:.3g}) missed {int(missed)}; "
              f"changes' min {np.abs(r[col][lab]).min() if lab.any() else float('nan'):.3g}")
    print(f"ALL rule {tot_rule} -> {tot_kept}, changes {tot_ch}, missed {tot_missed}")
# predicted_effect is a fraction of the run (0.01 is 1%): SMALL is the bound below which a run counts as small
for SMALL in (0.001, 0.1):
  print(f"== changes the size misses (|predicted_effect| < {SMALL:.1%}), and whether a hazard fires on them")
  allr = pd.concat([r.assign(project=p) for p, (r, _) in rows.items()])
  F = allr[FEATURE_NAMES].to_numpy(float)
  hz = d.hazards_firing(F).any(1)
  lab = allr.label.astype(bool).to_numpy()
  small = np.abs(allr.predicted_effect.fillna(0).to_numpy()) < SMALL
  print(f"rule runs {len(allr)}, changes {lab.sum()}; changes with |pe|<{SMALL:.1%}: {(lab&small).sum()} (hazard fires on {(lab&small&hz).sum()})")
  print(f"non-changes with |pe|<{SMALL:.1%}: {(~lab&small).sum()} (hazard fires on {(~lab&small&hz).sum()}); non-changes |pe|>={SMALL:.1%}: {(~lab&~small).sum()}")
  print(f"non-changes pruneable (|pe|<{SMALL:.1%}, no hazard): {(~lab&small&~hz).sum()} of {(~lab).sum()}")
  print(allr[lab&small&~hz].groupby('project').size())
  silent = allr[lab & small & ~hz]
  cols = ['project','new','old','benchmark','effect','predicted_effect','executed_changed_share','executed_steering_share','changed_data_reached','changed_functions','reached_instruction_difference','build_config_changed']
  pd.set_option('display.width', 250); pd.set_option('display.max_columns', 20)
  print(silent[cols].assign(new=silent.new.str[:8], old=silent.old.str[:8]).to_string(index=False))
  data = allr.changed_data_reached.fillna(0).to_numpy() > 0
  prune = small & ~hz & ~data
  print(f"prune |pe|<{SMALL:.1%}, no hazard, no changed data reached: non-changes {(~lab&prune).sum()} of {(~lab).sum()}, changes missed {(lab&prune).sum()} of {lab.sum()}; runs {len(allr)-prune.sum()} for {lab.sum()} changes ({(len(allr)-prune.sum())/lab.sum():.1f} each)")
  print(allr[lab & prune].groupby('project').size().to_dict())
