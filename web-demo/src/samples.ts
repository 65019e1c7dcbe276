// Sample long documents for the demo's document search: written for this demo (no third-party
// text), long enough to need several chunks, with example queries and the clause each should find.

export interface SampleDocument {
  readonly id: string;
  readonly title: string;
  readonly text: string;
  /** Example queries, each with a phrase from the clause it should find first. */
  readonly queries: readonly { readonly text: string; readonly expect: string }[];
}

const LEASE = `COMMERCIAL LEASE AGREEMENT

This Commercial Lease Agreement (the "Lease") is made between Harbor Point Holdings LLC (the "Landlord") and Juniper & Vale Legal Services PC (the "Tenant").

1. PREMISES
1.1 The Landlord leases to the Tenant the office space known as Suite 410, 200 Harbor Point Drive (the "Premises"), comprising approximately 3,200 rentable square feet, together with the non-exclusive right to use the common areas of the building.
1.2 The Tenant accepts the Premises in their "as is" condition on the Commencement Date, subject to the Landlord's obligation to complete the work listed in Schedule B.

2. TERM
2.1 The term of this Lease begins on March 1 (the "Commencement Date") and ends at midnight on the last day of the sixtieth full calendar month after it, unless terminated earlier under this Lease.
2.2 Provided the Tenant is not in default, the Tenant may extend the term once for a further period of five years by giving the Landlord written notice at least nine months and no more than twelve months before the term expires. Base Rent for the extension term shall be ninety-five percent of the prevailing market rent.

3. RENT
3.1 The Tenant shall pay Base Rent of $9,600.00 per month, in advance, on the first day of each calendar month, without demand, deduction or set-off, by electronic transfer to the account the Landlord designates in writing.
3.2 On each anniversary of the Commencement Date, Base Rent shall increase by three percent over the Base Rent payable in the preceding year.
3.3 If any payment is not received within five days after its due date, the Tenant shall pay a late charge of five percent of the overdue amount, and overdue amounts shall bear interest at ten percent per year until paid.

4. SECURITY DEPOSIT
4.1 On signing this Lease the Tenant shall deposit with the Landlord $19,200.00 as security for the performance of the Tenant's obligations (the "Security Deposit").
4.2 The Landlord may apply all or part of the Security Deposit to cure any default of the Tenant, including unpaid rent and the cost of repairing damage beyond ordinary wear and tear. The Tenant shall restore the Security Deposit to its full amount within ten days after written demand.
4.3 Within thirty days after the end of the term and the surrender of the Premises, the Landlord shall return the Security Deposit, less any amounts properly applied under Section 4.2, together with an itemized statement of the deductions.

5. USE
5.1 The Tenant shall use the Premises only as professional offices for the practice of law and related administrative purposes, and for no other purpose without the Landlord's prior written consent.
5.2 The Tenant shall comply with all laws, ordinances and building rules applicable to its use of the Premises, and shall not cause a nuisance or any use that would increase the Landlord's insurance premiums.

6. MAINTENANCE AND REPAIRS
6.1 The Landlord shall keep the roof, structure, exterior walls, elevators and the building systems serving the Premises (heating, ventilation, air conditioning, plumbing and electrical) in good repair, at its cost except to the extent recoverable as operating expenses.
6.2 The Tenant shall keep the interior of the Premises clean and in good condition and shall promptly notify the Landlord of any damage or defect that it is the Landlord's responsibility to repair.

7. ALTERATIONS
7.1 The Tenant shall not make structural alterations to the Premises. Non-structural alterations costing more than $10,000 require the Landlord's prior written consent, which shall not be unreasonably withheld, conditioned or delayed.
7.2 At the end of the term the Tenant shall remove any alterations the Landlord designated for removal when it gave its consent, and shall repair any damage caused by their removal.

8. ASSIGNMENT AND SUBLETTING
8.1 The Tenant shall not assign this Lease or sublet all or part of the Premises without the Landlord's prior written consent, which shall not be unreasonably withheld. A change of control of the Tenant is an assignment for the purposes of this Section.
8.2 The Tenant may, without consent, assign this Lease to a successor firm formed by the merger or reorganization of the Tenant, if the successor assumes this Lease in writing and has a net worth no less than the Tenant's.

9. INSURANCE AND INDEMNITY
9.1 The Tenant shall maintain commercial general liability insurance of not less than $2,000,000 per occurrence, naming the Landlord as an additional insured, and shall deliver certificates of insurance before taking possession.
9.2 The Tenant shall indemnify and hold harmless the Landlord from all claims, losses and expenses, including reasonable attorneys' fees, arising from the Tenant's use of the Premises or its breach of this Lease, except to the extent caused by the negligence or wilful misconduct of the Landlord.

10. DAMAGE AND DESTRUCTION
10.1 If the Premises are damaged by fire or other casualty, the Landlord shall restore them with reasonable diligence, and Base Rent shall abate in proportion to the part of the Premises that cannot be used until restoration is complete.
10.2 If restoration cannot reasonably be completed within one hundred eighty days after the casualty, either party may terminate this Lease by written notice given within thirty days after the Landlord's estimate of the restoration period.

11. DEFAULT AND REMEDIES
11.1 Each of the following is an Event of Default: the Tenant fails to pay rent within five days after written notice that it is overdue; the Tenant fails to perform any other obligation within thirty days after written notice; or the Tenant becomes insolvent or makes an assignment for the benefit of creditors.
11.2 On an Event of Default the Landlord may terminate this Lease by written notice, re-enter the Premises by lawful process, and recover from the Tenant the rent due and the damages caused by the default, subject to its duty to mitigate its losses by making reasonable efforts to relet the Premises.

12. QUIET ENJOYMENT
So long as the Tenant pays the rent and performs its obligations, the Tenant shall peaceably and quietly hold and enjoy the Premises during the term without hindrance by the Landlord or anyone claiming through the Landlord.

13. NOTICES
All notices under this Lease shall be in writing and delivered by hand, by a national courier, or by e-mail with a copy by courier, to the addresses stated on the signature page. A notice is effective on delivery, or on the next business day if delivered after 5:00 p.m.

14. GOVERNING LAW AND DISPUTES
14.1 This Lease is governed by the laws of the State in which the Premises are located.
14.2 The parties shall first attempt in good faith to resolve any dispute by negotiation between senior representatives; a dispute not resolved within thirty days may be submitted to the courts of the county in which the Premises are located, and each party waives trial by jury.

15. MISCELLANEOUS
15.1 This Lease is the entire agreement between the parties about its subject matter and supersedes all prior negotiations and understandings.
15.2 If any provision of this Lease is held invalid or unenforceable, the remaining provisions shall continue in full force and effect.
15.3 This Lease may be amended only by a written instrument signed by both parties.`;

export const SAMPLE_DOCUMENTS: readonly SampleDocument[] = [
  {
    id: 'commercial-lease',
    title: 'Commercial lease (15 articles)',
    text: LEASE,
    queries: [
      { text: 'When must the landlord give back the deposit?', expect: 'Within thirty days after the end of the term' },
      { text: 'Can the tenant sublet the office?', expect: 'sublet all or part of the Premises' },
      { text: 'Penalty for paying rent late', expect: 'late charge of five percent' },
      { text: 'Who must repair the air conditioning?', expect: 'heating, ventilation, air conditioning' },
      { text: 'Can the landlord evict the tenant for not paying?', expect: 'Event of Default' },
      { text: 'Which court hears disputes?', expect: 'submitted to the courts' },
    ],
  },
];
