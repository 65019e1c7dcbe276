// Sample passages for the demo: short excerpts adapted from U.S. federal statutes and the D.C.
// Code, both in the public domain (17 U.S.C., 15 U.S.C., 29 U.S.C., 42 U.S.C., D.C. Code).

export interface Passage {
  readonly id: string;
  readonly source: string;
  readonly text: string;
}

export const PASSAGES: readonly Passage[] = [
  { id: 'copyright-fair-use', source: '17 U.S.C. § 107', text: 'The fair use of a copyrighted work, including such use by reproduction in copies, for purposes such as criticism, comment, news reporting, teaching, scholarship, or research, is not an infringement of copyright.' },
  { id: 'copyright-duration', source: '17 U.S.C. § 302', text: 'Copyright in a work created on or after January 1, 1978, subsists from its creation and endures for a term consisting of the life of the author and 70 years after the author\u2019s death.' },
  { id: 'debt-collection-hours', source: '15 U.S.C. § 1692c', text: 'A debt collector may not communicate with a consumer in connection with the collection of any debt at any unusual time or place, before 8 o\u2019clock antemeridian or after 9 o\u2019clock postmeridian, local time at the consumer\u2019s location.' },
  { id: 'credit-discrimination', source: '15 U.S.C. § 1691', text: 'It shall be unlawful for any creditor to discriminate against any applicant, with respect to any aspect of a credit transaction, on the basis of race, color, religion, national origin, sex or marital status, or age.' },
  { id: 'minimum-wage', source: '29 U.S.C. § 206', text: 'Every employer shall pay to each of his employees who in any workweek is engaged in commerce wages at a rate not less than the minimum wage set by this section.' },
  { id: 'overtime', source: '29 U.S.C. § 207', text: 'No employer shall employ any of his employees for a workweek longer than forty hours unless such employee receives compensation for his employment in excess of the hours specified at a rate not less than one and one-half times the regular rate at which he is employed.' },
  { id: 'employment-discrimination', source: '42 U.S.C. § 2000e-2', text: 'It shall be an unlawful employment practice for an employer to fail or refuse to hire or to discharge any individual because of such individual\u2019s race, color, religion, sex, or national origin.' },
  { id: 'security-deposit', source: 'D.C. Code § 42-3502.17', text: 'A housing provider may require a security deposit not exceeding one month\u2019s rent, which shall be held in an interest-bearing escrow account and returned to the tenant within 45 days after the tenancy ends.' },
  { id: 'notice-to-vacate', source: 'D.C. Code § 42-3505.01', text: 'A tenant may not be evicted unless the housing provider has served a written notice to vacate stating the reason for the eviction and the time within which the tenant must correct the violation or vacate.' },
  { id: 'voter-qualification', source: 'D.C. Code § 1-1001.02', text: 'A qualified elector is a person who is at least 17 years of age and will be 18 on or before the next general election, is a citizen of the United States, and has maintained a residence in the District for at least 30 days.' },
];

/** The fixed query the browser tests use, and the passage it must rank first. */
export const SAMPLE_QUERY = { text: 'overtime pay for hours worked beyond forty in a workweek', expected: 'overtime' } as const;
