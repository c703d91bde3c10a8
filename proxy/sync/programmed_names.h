// ProgrammedNames: the daemon's half of "publish after programming"
// (docs/dns.md): from the Plans the daemon syncs, what the kernel serves of
// each Service, as reports for dns::DnsService::report_programmed.
//
// Around each sync: before_sync() gives what DNS must withdraw first (what
// the kernel serves now and the new plan keeps: a Service or port the plan
// drops loses its names before its rules, whether or not the sync then
// succeeds), after_sync() what an accepted sync added. A failed sync adds
// nothing, so a Service whose rules never got in stays unpublished while
// the rest keep serving. The Services looked at are those the plan's change
// set names, gathered over failed syncs until one is accepted, or every one
// after a plan built whole.
//
// Thread safety: none; the daemon calls it from the sync runner's thread.
#pragma once

#include <map>
#include <set>

#include "dns/zone/programmed.h"
#include "rules/plan.h"
#include "watch/objects.h"

namespace sb::proxy {

// What `plan` serves of the Service `key` (null: nothing).
dns::ProgrammedServicePtr programmed_service(const rules::Plan& plan, const watch::ObjectKey& key);

class ProgrammedNames {
  public:
    dns::ProgrammedChanges before_sync(const rules::Plan& plan);
    dns::ProgrammedChanges after_sync(const rules::Plan& plan);

  private:
    // The Services `plan` may change against the kernel's state (all: nullopt).
    void note_plan(const rules::Plan& plan);
    template <typename Next>
    dns::ProgrammedChanges report(const rules::Plan& plan, Next next);

    std::map<watch::ObjectKey, dns::ProgrammedServicePtr> kernel_;
    std::set<watch::ObjectKey> pending_;
    bool pending_all_ = true;
    uint64_t noted_revision_ = 0;
};

}  // namespace sb::proxy
